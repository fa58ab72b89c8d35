/**
 * Wake latency per backend (`bench:wakes`): how late the runtime's wake
 * dispatcher fires wakes after their due time, p50 and p99 of the recorded
 * `firing.latenessMs`, with one and with three dispatchers (in this process,
 * each on its own backend instance over the same storage). Each cell
 * registers WAKE_COUNT wakes (S3: WAKE_COUNT_S3) due at random over the next
 * 2 s, starting 1 s after registration ends, with dispatchers ticking every
 * WAKE_TICK_MS (100), a no-op handler, and waits until every wake is
 * delivered. Not a timed test: figures for FINDINGS.md and the runtime docs.
 * Knobs: WAKE_BACKENDS (fs,sqlite,redis,s3), WAKE_COUNT (200), WAKE_COUNT_S3
 * (50), WAKE_TICK_MS (100), WAKE_SPREAD_MS (2000: the due times' spread;
 * `WAKE_COUNT=10000 WAKE_SPREAD_MS=1000` is the "10,000 timers due in
 * the same second", whose last column is the time until all have fired),
 * WAKE_RESULT (`wake-latency`: the results' file name). Writes
 * results/<WAKE_RESULT>.json and .md.
 *
 * Also counts the dispatchers' backend calls per wake, listings apart (the
 * calls on one wake's keys do not depend on load; the listings grow with the
 * number of ticks, so with the time the run takes), and the keys listed per
 * wake, counted on each instance's own `list`, so the listings a backend's
 * watch makes (SQLite's polling) are in it.
 *
 * Progress is followed by the handler's calls, not by reading the records:
 * on SQLite a read settles without leaving the event loop's turn while a
 * write waits for the next one, so a loop reading 10,000 records starved the
 * dispatchers' writes in this process.
 */
import type { Backend } from '@agent-state/core'
import { getWake, registerWake, startWakeDispatcher } from '@agent-state/runtime'
import {
  countingCalls,
  countListed,
  loadAverage,
  quantile,
  wakeBenchStorages,
  writeWakeResults,
} from './wake-bench-setup.js'

const BACKENDS = (process.env.WAKE_BACKENDS ?? 'fs,sqlite,redis,s3').split(',')
const COUNT = Number(process.env.WAKE_COUNT ?? 200)
const COUNT_S3 = Number(process.env.WAKE_COUNT_S3 ?? 50)
const TICK_MS = Number(process.env.WAKE_TICK_MS ?? 100)
const SPREAD_MS = Number(process.env.WAKE_SPREAD_MS ?? 2000)
const RESULT = process.env.WAKE_RESULT ?? 'wake-latency'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const storages = wakeBenchStorages('wake-bench')

/** Opens `n` instances over one fresh storage of `name`. */
async function open(name: string, cell: string, n: number): Promise<Backend[]> {
  return Array.from({ length: n }, await storages.open(name, cell))
}

interface Row {
  backend: string
  dispatchers: number
  wakes: number
  /** The dispatchers' backend calls other than `list` per wake (acquire, get, put, delete, release...). */
  callsPerWake: number
  /** The dispatchers' `list` calls per wake (idle ticks included). */
  listsPerWake: number
  /** Keys and groups listed per wake by the dispatchers' instances, their watches' listings included. */
  listedPerWake: number
  p50Ms: number
  p99Ms: number
  maxMs: number
  drainMs: number
}

async function cell(name: string, dispatchers: number): Promise<Row> {
  const count = name === 's3' ? COUNT_S3 : COUNT
  const backends = await open(name, `${name}-${dispatchers}`, dispatchers)
  const [first] = backends as [Backend]
  try {
    const ids: string[] = []
    const planned = Array.from({ length: count }, () => Math.floor(Math.random() * SPREAD_MS))
    const base = Date.now() + 1000 + count * (name === 's3' ? 40 : 5)
    for (let i = 0; i < count; i += 25) {
      const batch = await Promise.all(
        planned.slice(i, i + 25).map((offset, j) =>
          registerWake(first, {
            target: { kind: 'worker', workerId: `w${i + j}` },
            cause: 'timeout',
            dueAt: base + offset,
          }),
        ),
      )
      ids.push(...batch.map((wake) => wake.id))
    }
    let calls = 0
    let lists = 0
    let listed = 0
    for (const backend of backends) countListed(backend, (keys) => (listed += keys))
    const counted = backends.map((backend) =>
      countingCalls(backend, (method) => (method === 'list' ? lists++ : calls++)),
    )
    const handled = new Set<string>()
    const started = counted.map((backend) =>
      startWakeDispatcher(backend, {
        handlers: {
          timeout: async (wake) => {
            handled.add(wake.id)
          },
        },
        intervalMs: TICK_MS,
      }),
    )
    const lastDue = base + Math.max(...planned)
    // Every wake handled, then read until each is recorded delivered (the write after its handler).
    let waiting = ids
    while (waiting.length > 0) {
      await sleep(200)
      if (handled.size < count) {
        if (Date.now() > lastDue + 300_000)
          throw new Error(`${name}: ${handled.size}/${count} handled after 5 min`)
        continue
      }
      const still: string[] = []
      for (const id of waiting) {
        if ((await getWake(first, id)).delivery?.deliveredAt == null) still.push(id)
      }
      waiting = still
    }
    await Promise.all(started.map((dispatcher) => dispatcher.stop()))
    const dispatcherCalls = calls
    const dispatcherLists = lists
    const dispatcherListed = listed
    const lateness: number[] = []
    let lastDelivered = 0
    for (const id of ids) {
      const record = await getWake(first, id)
      lateness.push(record.firing?.latenessMs ?? Number.NaN)
      lastDelivered = Math.max(lastDelivered, record.delivery?.deliveredAt ?? 0)
    }
    return {
      backend: name,
      dispatchers,
      wakes: count,
      callsPerWake: Math.round((dispatcherCalls / count) * 100) / 100,
      listsPerWake: Math.round((dispatcherLists / count) * 100) / 100,
      listedPerWake: Math.round((dispatcherListed / count) * 100) / 100,
      p50Ms: quantile(lateness, 0.5),
      p99Ms: quantile(lateness, 0.99),
      maxMs: Math.max(...lateness),
      drainMs: lastDelivered - lastDue,
    }
  } finally {
    await Promise.all(backends.map((backend) => backend.close()))
  }
}

const rows: Row[] = []
try {
  for (const name of BACKENDS) {
    for (const dispatchers of [1, 3]) {
      const row = await cell(name, dispatchers)
      rows.push(row)
      console.info(JSON.stringify(row))
    }
  }
} finally {
  await storages.stop()
}
const load = loadAverage()
const table = [
  `Wake lateness after the due time (${COUNT} wakes, S3 ${COUNT_S3}, due at random over ${SPREAD_MS} ms; tick every ${TICK_MS} ms, no-op handler), ${new Date().toISOString()}, load average ${load}:`,
  '',
  '| backend | dispatchers | wakes | calls per wake (no list) | lists per wake | keys listed per wake (watch included) | p50 ms | p99 ms | max ms | last delivered after last due, ms |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ...rows.map(
    (r) =>
      `| ${r.backend} | ${r.dispatchers} | ${r.wakes} | ${r.callsPerWake} | ${r.listsPerWake} | ${r.listedPerWake} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.drainMs} |`,
  ),
  '',
].join('\n')
writeWakeResults(RESULT, { tickMs: TICK_MS, spreadMs: SPREAD_MS, load, rows }, table)
