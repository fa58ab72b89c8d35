/**
 * Backend calls of an idle wake dispatcher (`bench:wakes-idle`): one
 * dispatcher over a storage holding P pending wakes, none due (due at random
 * over the next 24 hours from now + 1 h, so in many 60-second buckets),
 * counted over WAKE_IDLE_WINDOW_MS (30 000) with `tickOnChange` (a notified
 * dispatcher sleeps until the earliest wake or its 60 s ceiling) and without
 * (a tick every interval, 1000 ms). The issue's target: O(1) in pending
 * wakes, near zero with notifications. P is 1,000, then 100,000 (the same
 * storage, 99,000 more registered). The figures are counts of calls, which
 * load does not change (the keys a listing reads are not counted here; see
 * docs/runtime/wakes.md, A tick, for the bound). Knobs: WAKE_BACKENDS
 * (sqlite,redis: fs and S3 take long to register 100,000 wakes), WAKE_IDLE_COUNTS
 * (1000,100000), WAKE_IDLE_WINDOW_MS (30000), WAKE_RESULT (`wake-idle`: the results' file
 * name). Writes results/<WAKE_RESULT>.json and .md.
 */
import type { Backend } from '@agent-state/core'
import { registerWake, startWakeDispatcher } from '@agent-state/runtime'
import {
  countingCalls,
  loadAverage,
  wakeBenchStorages,
  writeWakeResults,
} from './wake-bench-setup.js'

const BACKENDS = (process.env.WAKE_BACKENDS ?? 'sqlite,redis').split(',')
const COUNTS = (process.env.WAKE_IDLE_COUNTS ?? '1000,100000').split(',').map(Number)
const WINDOW_MS = Number(process.env.WAKE_IDLE_WINDOW_MS ?? 30_000)
const RESULT = process.env.WAKE_RESULT ?? 'wake-idle'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const storages = wakeBenchStorages('wake-idle')

interface Row {
  backend: string
  pending: number
  tickOnChange: boolean
  notified: boolean
  ticks: number
  calls: number
  callsPerSecond: number
}

/** Registers wakes `from` to `to - 1` of the storage, 100 at a time, none due in the next hour. */
async function register(backend: Backend, from: number, to: number): Promise<void> {
  const start = Date.now() + 3_600_000
  for (let i = from; i < to; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, to - i) }, (_, j) =>
        registerWake(backend, {
          target: { kind: 'worker', workerId: `w${i + j}` },
          cause: 'timeout',
          dueAt: start + Math.floor(Math.random() * 86_400_000),
        }),
      ),
    )
  }
}

async function measure(
  make: () => Backend,
  name: string,
  pending: number,
  tickOnChange: boolean,
): Promise<Row> {
  const inner = make()
  let calls = 0
  const dispatcher = startWakeDispatcher(
    countingCalls(inner, () => calls++),
    { handlers: { timeout: async () => undefined }, intervalMs: 1000, tickOnChange },
  )
  try {
    await dispatcher.ready
    // The first tick (and the watch's set-up) apart: the window counts the idle state.
    await sleep(2000)
    const [ticks0, calls0] = [dispatcher.ticks, calls]
    await sleep(WINDOW_MS)
    const counted = calls - calls0
    return {
      backend: name,
      pending,
      tickOnChange,
      notified: dispatcher.notified,
      ticks: dispatcher.ticks - ticks0,
      calls: counted,
      callsPerSecond: Math.round((counted / (WINDOW_MS / 1000)) * 100) / 100,
    }
  } finally {
    await dispatcher.stop()
    await inner.close()
  }
}

const rows: Row[] = []
// The dispatcher's timers do not hold the process open (unref): this does, while it is measured.
const keepAlive = setInterval(() => undefined, 1000)
try {
  for (const name of BACKENDS) {
    const make = await storages.open(name, name)
    const registrant = make()
    let registered = 0
    for (const pending of COUNTS) {
      const began = Date.now()
      await register(registrant, registered, pending)
      console.info(
        `${name}: ${pending} pending (${Date.now() - began} ms to register ${pending - registered})`,
      )
      registered = pending
      for (const tickOnChange of [true, false]) {
        const row = await measure(make, name, pending, tickOnChange)
        rows.push(row)
        console.info(JSON.stringify(row))
      }
    }
    await registrant.close()
  }
} finally {
  clearInterval(keepAlive)
  await storages.stop()
}
const load = loadAverage()
const table = [
  `Backend calls of an idle dispatcher (interval 1000 ms, idle ceiling 60 s, window ${WINDOW_MS} ms after a 2 s settle), ${new Date().toISOString()}, load average ${load}:`,
  '',
  '| backend | pending wakes | tickOnChange | notified | ticks | calls | calls per second |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  ...rows.map(
    (r) =>
      `| ${r.backend} | ${r.pending} | ${r.tickOnChange} | ${r.notified} | ${r.ticks} | ${r.calls} | ${r.callsPerSecond} |`,
  ),
  '',
].join('\n')
writeWakeResults(RESULT, { windowMs: WINDOW_MS, load, rows }, table)
