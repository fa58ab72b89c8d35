/**
 * Latency of a wake registered due now (`bench:wakes-notified`): from
 * `registerWake` returning to the handler's call, with one dispatcher ticking
 * every WAKE_INTERVAL_MS (1000, the default), with `tickOnChange` (ticks woken
 * by the backend's change notification) and without (the interval alone).
 * The wakes are registered one at a time, each after a random pause of up to
 * one interval, so the interval's phase is random. Also the dispatcher's ticks
 * per wake (the interval's own ticks included). Not a timed test: figures for
 * docs/runtime/wakes.md. Knobs: WAKE_BACKENDS (fs,sqlite,redis),
 * WAKE_NOTIFIED_COUNT (20), WAKE_INTERVAL_MS (1000). Writes
 * results/wake-notified.json and .md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createRedisBackend } from '@agent-state/redis'
import { registerWake, startWakeDispatcher } from '@agent-state/runtime'
import { createSqliteBackend } from '@agent-state/sqlite'
import { startRedisServer } from '@agent-state/test-services'

const BACKENDS = (process.env.WAKE_BACKENDS ?? 'fs,sqlite,redis').split(',')
const COUNT = Number(process.env.WAKE_NOTIFIED_COUNT ?? 20)
const INTERVAL_MS = Number(process.env.WAKE_INTERVAL_MS ?? 1000)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let redis: ReturnType<typeof startRedisServer> | undefined
const root = mkdtempSync(join(tmpdir(), 'agent-state-wake-notified-'))

/** A fresh backend of `name` (a second instance over it is the registrant: another process). */
async function open(name: string, cell: string): Promise<() => Backend> {
  const namespace = `wn-${cell}`
  switch (name) {
    case 'fs': {
      const dir = join(root, cell)
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      return () => createFsBackend({ root: dir, namespace })
    }
    case 'sqlite': {
      const path = join(root, `${cell}.db`)
      return () => createSqliteBackend({ path, namespace })
    }
    case 'redis': {
      redis ??= startRedisServer()
      const { host, port } = await redis
      return () => createRedisBackend({ host, port, namespace })
    }
    default:
      throw new Error(`unknown backend ${name}`)
  }
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN
}

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
  const make = await open(name, `${name}-${tickOnChange}`)
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
  await redis?.then((server) => server.stop())
  rmSync(root, { recursive: true, force: true })
}
const load = loadavg()[0]?.toFixed(1) ?? '?'
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
mkdirSync(new URL('../results/', import.meta.url), { recursive: true })
writeFileSync(
  new URL('../results/wake-notified.json', import.meta.url),
  `${JSON.stringify({ intervalMs: INTERVAL_MS, load, rows }, null, 2)}\n`,
)
writeFileSync(new URL('../results/wake-notified.md', import.meta.url), table)
console.info(table)
