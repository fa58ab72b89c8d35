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
 * (50), WAKE_TICK_MS (100). Writes results/wake-latency.json and .md.
 *
 * Also counts the dispatchers' backend calls per wake, listings apart (the
 * calls on one wake's keys do not depend on load; the listings grow with the
 * number of ticks, so with the time the run takes).
 */
import type { Backend } from '@agent-state/core'
import { getWake, registerWake, startWakeDispatcher } from '@agent-state/runtime'
import { loadAverage, quantile, wakeBenchStorages, writeWakeResults } from './wake-bench-setup.js'

const BACKENDS = (process.env.WAKE_BACKENDS ?? 'fs,sqlite,redis,s3').split(',')
const COUNT = Number(process.env.WAKE_COUNT ?? 200)
const COUNT_S3 = Number(process.env.WAKE_COUNT_S3 ?? 50)
const TICK_MS = Number(process.env.WAKE_TICK_MS ?? 100)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const storages = wakeBenchStorages('wake-bench')

/** Opens `n` instances over one fresh storage of `name`. */
async function open(name: string, cell: string, n: number): Promise<Backend[]> {
  return Array.from({ length: n }, await storages.open(name, cell))
}

/** `backend` with `count(method)` called on every method call (the dispatchers' round trips). */
function countingCalls(backend: Backend, count: (method: string) => void): Backend {
  return new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        count(String(property))
        return value.apply(target, args)
      }
    },
  })
}

interface Row {
  backend: string
  dispatchers: number
  wakes: number
  /** The dispatchers' backend calls other than `list` per wake (acquire, get, put, delete, release...). */
  callsPerWake: number
  /** The dispatchers' `list` calls per wake (idle ticks included). */
  listsPerWake: number
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
    const planned = Array.from({ length: count }, () => Math.floor(Math.random() * 2000))
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
    const counted = backends.map((backend) =>
      countingCalls(backend, (method) => (method === 'list' ? lists++ : calls++)),
    )
    const started = counted.map((backend) =>
      startWakeDispatcher(backend, {
        handlers: { timeout: async () => undefined },
        intervalMs: TICK_MS,
      }),
    )
    const lastDue = base + Math.max(...planned)
    let delivered = 0
    while (delivered < count) {
      await sleep(200)
      delivered = 0
      for (const id of ids)
        if ((await getWake(first, id)).delivery?.deliveredAt != null) delivered++
      if (Date.now() > lastDue + 300_000)
        throw new Error(`${name}: ${delivered}/${count} after 5 min`)
    }
    await Promise.all(started.map((dispatcher) => dispatcher.stop()))
    const dispatcherCalls = calls
    const dispatcherLists = lists
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
  `Wake lateness after the due time (tick every ${TICK_MS} ms, no-op handler), ${new Date().toISOString()}, load average ${load}:`,
  '',
  '| backend | dispatchers | wakes | calls per wake (no list) | lists per wake | p50 ms | p99 ms | max ms | last delivered after last due, ms |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ...rows.map(
    (r) =>
      `| ${r.backend} | ${r.dispatchers} | ${r.wakes} | ${r.callsPerWake} | ${r.listsPerWake} | ${r.p50Ms} | ${r.p99Ms} | ${r.maxMs} | ${r.drainMs} |`,
  ),
  '',
].join('\n')
writeWakeResults('wake-latency', { tickMs: TICK_MS, load, rows }, table)
