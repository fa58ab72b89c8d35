/**
 * Daemon queue benchmark (issue 14): trigger and claim+ack throughput and
 * p50 per backend with 1k, 10k and 100k events already pending, to show
 * that the cost per operation does not grow with the queue.
 *
 *   pnpm bench:queue                                  # from benchmarks/
 *   QUEUE_BENCH_BACKENDS=memory,sqlite QUEUE_BENCH_SIZES=1000,10000 pnpm bench:queue
 *
 * Peers (`queue-peers.ts`): BullMQ on the same redis-server and plainjob on
 * SQLite; `sqlite-normal` is our SQLite backend with plainjob's
 * `synchronous = NORMAL`.
 *
 * Knobs: `QUEUE_BENCH_BACKENDS` (default all five, sqlite-normal, the native rows and the peers), `QUEUE_BENCH_SIZES`
 * (default 1000,10000,100000), `QUEUE_BENCH_OPS` (timed operations per cell,
 * default 300), `QUEUE_BENCH_S3_MAX` (largest size on S3, default 10000:
 * filling RGW with 100k objects takes longer than the rest of the run).
 * Closed loop at concurrency 1 (one producer, then one consumer: the queue
 * allows one delivery in flight), then triggers from 16 concurrent callers
 * on one handle (which the queue combines into shared writes) and from 16
 * handles on 16 backend instances (which it cannot: as with 16 processes)
 * and from 16 handles on the measured instance (one process's producers:
 * SQLite's group commit shares a transaction between them),
 * then `triggerMany` batches of 16 and a consumer that keeps its delivery
 * lease (`ackAndClaim`) (and, for the peers, claim+ack from 16 concurrent
 * consumers, which a daemon queue does not allow by design). Counts beside
 * the times, which machine load does not change: backend calls per
 * operation, and compare-and-set rounds lost per stored event at c=16. The backlog is written straight into the
 * queue's records (untimed, through a second backend instance without fsync
 * where the backend has that option), in exactly the layout `trigger` leaves.
 * `redis-native` is our Redis backend with queues on the native path (one
 * Lua script per trigger, claim and ack; docs/runtime/daemons.md, "Queue
 * paths"); its rows also carry the server's own command counts per
 * operation (`INFO commandstats`: scripts run and Redis commands inside
 * them), which load does not change either. `sqlite-native` and
 * `sqlite-normal-native` are the SQLite rows with queues on the native path
 * (one group-committed transaction per trigger, claim and ack), under the
 * default `synchronous = FULL` and plainjob's `NORMAL`. `postgres` and
 * `postgres-native`: our PostgreSQL backend on a server the run starts
 * (default settings, `synchronous_commit = on`), generic and native path (one
 * transaction in two pipelined round trips per trigger, claim and ack). No
 * PostgreSQL queue peer (pg-boss, graphile-worker) is in the offline store,
 * so PostgreSQL has no peer row.
 * Results: stdout (a markdown table) and `results/queue-latest.json`.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { createPostgresBackend } from '@agent-state/postgres'
import { createRedisBackend } from '@agent-state/redis'
import {
  createDaemonQueue,
  type DaemonQueue,
  type EventRecord,
  openDaemonQueue,
} from '@agent-state/runtime'
import { daemonEventKey, daemonTailKey, encodeRecord } from '@agent-state/runtime/internal'
import { createS3Backend } from '@agent-state/s3'
import { createSqliteBackend } from '@agent-state/sqlite'
import { startPostgresServer, startRedisServer, startRgw } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import { type CallCounts, countingBackend, totalCalls } from './queue-counting.js'
import {
  measureBullmq,
  measurePlainjob,
  type PeerSamples,
  type Timed,
  timed,
  timedFrom,
} from './queue-peers.js'

interface Pair {
  /** The instance measured (default options). */
  readonly measured: Backend
  /** An instance on the same storage used to fill the backlog fast. */
  readonly filler: Backend
  /** Opens one more instance like `measured` on the same storage (closed by the caller). */
  readonly another: () => Backend
}

interface Row {
  backend: string
  pending: number
  operation: string
  ops: number
  opsPerSec: number
  p50Ms: number
  p99Ms: number
  /** Backend calls per operation (a count: machine load does not change it). */
  callsPerOp?: number
  /** Compare-and-set rounds lost and retried per stored event (a count). */
  retriesPerTrigger?: number
}

const backends = (
  process.env.QUEUE_BENCH_BACKENDS ??
  'memory,sqlite,sqlite-native,sqlite-normal,sqlite-normal-native,fs,redis,redis-native,postgres,postgres-native,s3,bullmq,plainjob'
).split(',')
const sizes = (process.env.QUEUE_BENCH_SIZES ?? '1000,10000,100000').split(',').map(Number)
const timedOps = Number(process.env.QUEUE_BENCH_OPS ?? 300)
const s3Max = Number(process.env.QUEUE_BENCH_S3_MAX ?? 10_000)
const root = mkdtempSync(join(tmpdir(), 'agent-state-queue-bench-'))

async function pairFor(name: string, cell: string): Promise<Pair & { close(): Promise<void> }> {
  const closeBoth = (pair: Pair) => async () => {
    await pair.measured.close()
    await pair.filler.close()
  }
  const make = async (): Promise<Pair> => {
    const namespace = `queue-${cell}`
    // `<backend>-native`: the same backend, its queue on the native path (measureCell).
    const base = name.replace(/-native$/, '')
    switch (base) {
      case 'memory': {
        const store = createMemoryStore()
        return {
          measured: createMemoryBackend({ store, namespace }),
          filler: createMemoryBackend({ store, namespace }),
          another: () => createMemoryBackend({ store, namespace }),
        }
      }
      case 'sqlite':
      case 'sqlite-normal': {
        const path = join(root, `${cell}.db`)
        // sqlite-normal: synchronous = NORMAL, what plainjob sets, for a like-for-like row.
        const synchronous = base === 'sqlite' ? 'FULL' : 'NORMAL'
        return {
          measured: createSqliteBackend({ path, namespace, synchronous }),
          filler: createSqliteBackend({ path, namespace, synchronous: 'NORMAL' }),
          another: () => createSqliteBackend({ path, namespace, synchronous }),
        }
      }
      case 'fs': {
        const dir = join(root, cell)
        mkdirSync(dir, { recursive: true, mode: 0o700 })
        return {
          measured: createFsBackend({ root: dir, namespace }),
          filler: createFsBackend({ root: dir, namespace, fsync: false }),
          another: () => createFsBackend({ root: dir, namespace }),
        }
      }
      case 'redis': {
        redis ??= startRedisServer()
        const { host, port } = await redis
        return {
          measured: createRedisBackend({ host, port, namespace }),
          filler: createRedisBackend({ host, port, namespace }),
          another: () => createRedisBackend({ host, port, namespace }),
        }
      }
      case 'postgres': {
        postgres ??= startPostgresServer({ settings: { max_connections: '200' } })
        const { url } = await postgres
        const options = { connectionString: url, namespace }
        return {
          measured: createPostgresBackend(options),
          filler: createPostgresBackend({ ...options, poolSize: 32 }),
          another: () => createPostgresBackend({ ...options, poolSize: 2 }),
        }
      }
      case 's3': {
        rgw ??= startRgw({ memstoreBytes: 4 * 1024 ** 3 })
        const target = await rgw
        const options = {
          bucket: 'queue-bench',
          namespace,
          endpoint: target.endpoint,
          region: target.region,
          forcePathStyle: true,
          createBucket: true,
          credentials: { accessKeyId: target.accessKeyId, secretAccessKey: target.secretAccessKey },
        }
        return {
          measured: createS3Backend(options),
          filler: createS3Backend(options),
          another: () => createS3Backend(options),
        }
      }
      default:
        throw new Error(`unknown backend ${name}`)
    }
  }
  const pair = await make()
  return { ...pair, close: closeBoth(pair) }
}

let redis: ReturnType<typeof startRedisServer> | undefined
let postgres: ReturnType<typeof startPostgresServer> | undefined

/** Redis commands the server ran, by name, from `INFO commandstats`. */
async function serverCommands() {
  const { host, port } = await (redis as NonNullable<typeof redis>)
  const client = new Redis({ host, port, lazyConnect: true })
  await client.connect()
  return {
    async read(): Promise<Record<string, number>> {
      const info = await client.info('commandstats')
      const out: Record<string, number> = {}
      for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
        out[match[1] as string] = Number(match[2])
      }
      return out
    },
    close: () => client.quit().then(() => undefined),
  }
}

/** Server commands per operation of each phase (`redis-native` only), printed to stderr. */
const serverCounts: Record<string, Record<string, number>> = {}

/**
 * Runs `body` and records the server's command counts per operation over it (the counting
 * client's own INFO calls excluded); `server` null: just runs it.
 */
async function onServer<T>(
  server: Awaited<ReturnType<typeof serverCommands>> | null,
  ops: number,
  phase: string,
  body: () => Promise<T>,
): Promise<T> {
  if (server === null) return body()
  const before = await server.read()
  const result = await body()
  const after = await server.read()
  const perOperation: Record<string, number> = {}
  for (const [command, calls] of Object.entries(after)) {
    const delta = calls - (before[command] ?? 0) - (command === 'info' ? 1 : 0)
    if (delta > 0) perOperation[command] = Number((delta / ops).toFixed(2))
  }
  serverCounts[phase] = perOperation
  process.stderr.write(`server commands per ${phase}: ${JSON.stringify(perOperation)}\n`)
  return result
}
let rgw: ReturnType<typeof startRgw> | undefined

/**
 * Writes `count` pending events in the layout `trigger` leaves: events/0..count-2 plus the
 * tail (the native path's trigger also gives the newest its own record: `native`).
 */
async function fillBacklog(
  filler: Backend,
  daemonId: string,
  count: number,
  native: boolean,
): Promise<void> {
  const record = (seq: number): EventRecord => ({
    format: 'agent-state/daemon-event',
    seq,
    eventId: `fill-${seq}`,
    event: { kind: 'file_changed', path: `src/file-${seq}.ts` },
    triggeredAt: new Date().toISOString(),
  })
  let next = 0
  const worker = async () => {
    for (let seq = next++; seq < count - (native ? 0 : 1); seq = next++) {
      await filler.put(daemonEventKey(daemonId, seq), encodeRecord(record(seq)))
    }
  }
  await Promise.all(Array.from({ length: 32 }, worker))
  await filler.put(
    daemonTailKey(daemonId),
    encodeRecord({ format: 'agent-state/daemon-tail', next: count, last: record(count - 1) }),
  )
}

function summarise(
  backend: string,
  pending: number,
  operation: Row['operation'],
  run: Timed,
  extra: Pick<Row, 'callsPerOp' | 'retriesPerTrigger'> = {},
): Row {
  const sorted = [...run.samples].sort((a, b) => a - b)
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN
  return {
    backend,
    pending,
    operation,
    ops: sorted.length,
    opsPerSec: Math.round((sorted.length / run.totalMs) * 1000),
    p50Ms: Number(at(0.5).toFixed(3)),
    p99Ms: Number(at(0.99).toFixed(3)),
    ...extra,
  }
}

/** Runs `body` and returns what it resolved with the backend calls it made per operation. */
async function perOp<T>(
  counts: CallCounts,
  ops: number,
  body: () => Promise<T>,
): Promise<{ result: T; callsPerOp: number }> {
  const before = totalCalls(counts)
  const result = await body()
  return { result, callsPerOp: Number(((totalCalls(counts) - before) / ops).toFixed(2)) }
}

/** Retries per stored event of `queues` over `body` (their `producerStats`, a count). */
async function retriesOver(queues: readonly DaemonQueue[], body: () => Promise<Timed>) {
  const sum = (key: 'events' | 'lostRounds') =>
    queues.reduce((total, queue) => total + queue.producerStats()[key], 0)
  const [events, lost] = [sum('events'), sum('lostRounds')]
  const run = await body()
  const stored = sum('events') - events
  return { run, retriesPerTrigger: Number(((sum('lostRounds') - lost) / stored).toFixed(3)) }
}

async function measureCell(name: string, pending: number): Promise<Row[]> {
  const cell = `${name}-${pending}`
  const pair = await pairFor(name, cell)
  try {
    const daemonId = 'bench'
    const { backend: measured, counts } = countingBackend(pair.measured)
    const native = name.endsWith('-native')
    const queue = await createDaemonQueue(measured, daemonId, {
      capacity: pending + 10 * timedOps + 10,
      path: native ? 'native' : 'generic',
    })
    const fillStart = Date.now()
    await fillBacklog(pair.filler, daemonId, pending, native)
    const server = name === 'redis-native' ? await serverCommands() : null
    const fillMs = Date.now() - fillStart
    // Warm-up outside the timed loops.
    for (let i = 0; i < 10; i++) await queue.trigger({ warm: i })
    const event = (i: number) => ({ kind: 'file_changed', path: `src/new-${i}.ts` })
    const trigger = await onServer(server, timedOps, `${pending} trigger`, () =>
      perOp(counts, timedOps, () => timed(timedOps, (i) => queue.trigger(event(i)))),
    )
    const claimAck = await onServer(server, timedOps, `${pending} claim+ack`, () =>
      perOp(counts, timedOps, () =>
        timed(timedOps, async () => {
          const delivery = await queue.claim()
          if (delivery === null) throw new Error('queue drained early')
          await delivery.ack()
        }),
      ),
    )
    const queued = await queue.counts()
    if (queued.queuedCount !== pending + 10)
      throw new Error(`unexpected count ${queued.queuedCount}`)
    // 16 producers on one queue: every trigger is a compare-and-set on the same tail record.
    const trigger16 = await retriesOver([queue], () =>
      timed(timedOps, (i) => queue.trigger(event(i)), 16),
    )
    // The same from 16 handles, each on its own backend instance: nothing in the process can
    // combine their writes, as with producers in 16 processes.
    const handles = Array.from({ length: 16 }, () => pair.another())
    const producers = await Promise.all(
      handles.map((backend) => openDaemonQueue(backend, daemonId)),
    )
    /** `timedOps` triggers from `from`, each handle triggering one at a time. */
    const triggersFrom = (from: readonly DaemonQueue[]) => () =>
      timedFrom(
        timedOps,
        from.map((producer) => (i: number) => producer.trigger(event(i))),
      )
    const trigger16Handles = await retriesOver(producers, triggersFrom(producers))
    await Promise.all(handles.map((backend) => backend.close()))
    // 16 handles on the measured instance itself (producers of one process): the runtime
    // combines nothing between handles, the backend's group commit (SQLite) may.
    const sharing = await Promise.all(
      Array.from({ length: 16 }, () => openDaemonQueue(measured, daemonId)),
    )
    const trigger16Shared = await retriesOver(sharing, triggersFrom(sharing))
    // Batches of 16 events, one conditional write each.
    const batches = Math.ceil(timedOps / 16)
    const many = await perOp(counts, batches, () =>
      timed(batches, (b) =>
        queue.triggerMany(Array.from({ length: 16 }, (_, k) => event(b * 16 + k))),
      ),
    )
    // A consumer that keeps its delivery lease: each operation acknowledges one event and
    // claims the next (ackAndClaim), against claim + ack above.
    let current = await queue.claim()
    const kept = await onServer(server, timedOps, `${pending} ackAndClaim`, () =>
      perOp(counts, timedOps, () =>
        timed(timedOps, async () => {
          if (current === null) throw new Error('queue drained early')
          current = await current.ackAndClaim()
        }),
      ),
    )
    await current?.ack()
    await server?.close()
    process.stderr.write(`${cell}: backlog filled in ${fillMs} ms\n`)
    return [
      summarise(name, pending, 'trigger', trigger.result, { callsPerOp: trigger.callsPerOp }),
      summarise(name, pending, 'claim+ack', claimAck.result, { callsPerOp: claimAck.callsPerOp }),
      summarise(name, pending, 'trigger c=16', trigger16.run, {
        retriesPerTrigger: trigger16.retriesPerTrigger,
      }),
      summarise(name, pending, 'trigger c=16, 16 handles', trigger16Handles.run, {
        retriesPerTrigger: trigger16Handles.retriesPerTrigger,
      }),
      summarise(name, pending, 'trigger c=16, 16 handles, 1 instance', trigger16Shared.run, {
        retriesPerTrigger: trigger16Shared.retriesPerTrigger,
      }),
      summarise(name, pending, 'triggerMany of 16', many.result, { callsPerOp: many.callsPerOp }),
      summarise(name, pending, 'ackAndClaim (kept lease)', kept.result, {
        callsPerOp: kept.callsPerOp,
      }),
    ]
  } finally {
    await pair.close()
  }
}

async function measurePeer(name: 'bullmq' | 'plainjob', pending: number): Promise<Row[]> {
  let samples: PeerSamples
  if (name === 'bullmq') {
    redis ??= startRedisServer()
    const { host, port } = await redis
    samples = await measureBullmq(host, port, pending, timedOps)
  } else {
    samples = await measurePlainjob(root, pending, timedOps)
  }
  return [
    summarise(name, pending, 'trigger', samples.trigger),
    summarise(name, pending, 'claim+ack', samples.claimAck),
    summarise(name, pending, 'trigger c=16', samples.trigger16),
    summarise(name, pending, 'claim+ack c=16', samples.claimAck16),
    ...(samples.trigger16Handles === undefined
      ? []
      : [summarise(name, pending, 'trigger c=16, 16 handles', samples.trigger16Handles)]),
  ]
}

const rows: Row[] = []
try {
  for (const name of backends) {
    for (const pending of sizes) {
      if (name === 's3' && pending > s3Max) continue
      const cellRows =
        name === 'bullmq' || name === 'plainjob'
          ? await measurePeer(name, pending)
          : await measureCell(name, pending)
      for (const row of cellRows) process.stderr.write(`${JSON.stringify(row)}\n`)
      rows.push(...cellRows)
    }
  }
} finally {
  await Promise.all([
    redis?.then((server) => server.stop()),
    rgw?.then((server) => server.stop()),
    postgres?.then((server) => server.stop()),
  ])
  rmSync(root, { recursive: true, force: true })
}

const table = [
  '| backend | pending | operation | ops/s | p50 ms | p99 ms | calls/op | retries/trigger |',
  '|---|---:|---|---:|---:|---:|---:|---:|',
  ...rows.map(
    (row) =>
      `| ${row.backend} | ${row.pending} | ${row.operation} | ${row.opsPerSec} | ${row.p50Ms} | ${row.p99Ms} | ${row.callsPerOp ?? ''} | ${row.retriesPerTrigger ?? ''} |`,
  ),
].join('\n')
console.log(table)
mkdirSync(new URL('../results/', import.meta.url), { recursive: true })
writeFileSync(
  new URL('../results/queue-latest.json', import.meta.url),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, timedOps, rows, serverCounts }, null, 2)}\n`,
)
