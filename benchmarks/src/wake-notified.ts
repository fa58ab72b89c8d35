/**
 * Latency of a wake registered due now (`bench:wakes-notified`): from
 * `registerWake` returning to the handler's call, with one dispatcher ticking
 * every WAKE_INTERVAL_MS (1000, the default), with `tickOnChange` (ticks woken
 * by the backend's change notification) and without (the interval alone).
 * The wakes are registered one at a time, each after a random pause of up to
 * one interval, so the interval's phase is random. Also the dispatcher's ticks
 * per wake (the interval's own ticks included). Not a timed test: figures for
 * docs/runtime/wakes.md. Knobs: WAKE_BACKENDS (fs,sqlite,redis),
 * WAKE_NOTIFIED_COUNT (20), WAKE_INTERVAL_MS (1000), WAKE_RESULT
 * (`wake-notified`: the results' file name). Writes results/<WAKE_RESULT>.json
 * and .md. S3 (`WAKE_BACKENDS=s3`) claims no notification: both its rows are
 * the interval alone.
 */
import type { Backend } from '@agent-state/core'
import { registerWake, startWakeDispatcher } from '@agent-state/runtime'
import { loadAverage, quantile, wakeBenchStorages, writeWakeResults } from './wake-bench-setup.js'

const BACKENDS = (process.env.WAKE_BACKENDS ?? 'fs,sqlite,redis').split(',')
const COUNT = Number(process.env.WAKE_NOTIFIED_COUNT ?? 20)
const INTERVAL_MS = Number(process.env.WAKE_INTERVAL_MS ?? 1000)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
// A second instance over a cell's storage is the registrant: another process.
const storages = wakeBenchStorages('wake-notified')

interface Row {
  backend: string
  tickOnChange: boolean
  notified: boolean
  wakes: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  ticksPerWake: number
}

async function cell(name: string, tickOnChange: boolean): Promise<Row> {
  const make: () => Backend = await storages.open(name, `${name}-${tickOnChange}`)
  const backend = make()
  const registrant = make()
  const waiting = new Map<string, () => void>()
  const handledEarly = new Set<string>()
  const dispatcher = startWakeDispatcher(backend, {
    handlers: {
      timeout: async (wake) => {
        const done = waiting.get(wake.id)
        if (done === undefined) handledEarly.add(wake.id)
        else done()
      },
    },
    intervalMs: INTERVAL_MS,
    tickOnChange,
  })
  try {
    await dispatcher.ready
    const latencies: number[] = []
    for (let i = 0; i < COUNT; i++) {
      await sleep(Math.random() * INTERVAL_MS)
      const wake = await registerWake(registrant, {
        target: { kind: 'worker', workerId: `w${i}` },
        cause: 'timeout',
        dueAt: Date.now(),
      })
      const registered = performance.now()
      await new Promise<void>((resolve) => {
        if (handledEarly.has(wake.id)) resolve()
        else waiting.set(wake.id, resolve)
      })
      latencies.push(Math.round(performance.now() - registered))
    }
    return {
      backend: name,
      tickOnChange,
      notified: dispatcher.notified,
      wakes: COUNT,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      maxMs: Math.max(...latencies),
      ticksPerWake: Math.round((dispatcher.ticks / COUNT) * 100) / 100,
    }
  } finally {
    await dispatcher.stop()
    await backend.close()
    await registrant.close()
  }
}

const rows: Row[] = []
// The dispatcher's timers do not hold the process open (unref): this does, while wakes are awaited.
const keepAlive = setInterval(() => undefined, 1000)
try {
  for (const name of BACKENDS) {
    for (const tickOnChange of [true, false]) {
      const row = await cell(name, tickOnChange)
      rows.push(row)
      console.info(JSON.stringify(row))
    }
  }
} finally {
  clearInterval(keepAlive)
  await storages.stop()
}
const load = loadAverage()
const table = [
  `Latency of a wake registered due now, registration to handler (one dispatcher, interval ${INTERVAL_MS} ms), ${new Date().toISOString()}, load average ${load}:`,
  '',
  '| backend | tickOnChange | notified | wakes | p50 ms | p99 ms | max ms | ticks per wake |',
  '| --- | --- | --- | --- | --- | --- | --- | --- |',
  ...rows.map(
    (r) =>
      `| ${r.backend} | ${r.tickOnChange} | ${r.notified} | ${r.wakes} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.ticksPerWake} |`,
  ),
  '',
].join('\n')
writeWakeResults(
  process.env.WAKE_RESULT ?? 'wake-notified',
  { intervalMs: INTERVAL_MS, load, rows },
  table,
)
