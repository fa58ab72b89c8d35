/**
 * The peers of the daemon queue benchmark, measured the same way (closed
 * loop, concurrency 1, the backlog added untimed first):
 * - BullMQ on the same redis-server: `Queue.add` for trigger;
 *   `Worker.getNextJob` + `Job.moveToCompleted` (manual processing) for
 *   claim+ack. No capacity bound; completed jobs are removed (`removeOnComplete`).
 * - plainjob on SQLite (same disk, better-sqlite3): `add` for trigger,
 *   `getAndMarkJobAsProcessing` + `markJobAsDone` for claim+ack. It sets
 *   `synchronous = NORMAL` itself (ours defaults to FULL), keeps done jobs
 *   until its maintenance task removes them, and has no capacity bound.
 */
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Queue, Worker } from 'bullmq'
import { better, defineQueue } from 'plainjob'

/** One measured peer cell: the latencies (ms) of each timed operation. */
export interface PeerSamples {
  readonly trigger: Timed
  readonly claimAck: Timed
  /** The same operations with 16 concurrent callers. */
  readonly trigger16: Timed
  readonly claimAck16: Timed
  /**
   * 16 producers with a connection each (BullMQ: a `Queue` each), as our "16 handles" row has a
   * backend instance each; `trigger16`'s callers share one connection. Absent for plainjob.
   */
  readonly trigger16Handles?: Timed
}

/** Latencies (ms) of each operation and the wall time of the whole loop. */
export interface Timed {
  readonly samples: number[]
  readonly totalMs: number
}

/** Runs `count` operations from `concurrency` closed-loop callers; operation `i` gets its index. */
export async function timed(
  count: number,
  op: (i: number) => Promise<unknown> | unknown,
  concurrency = 1,
): Promise<Timed> {
  return timedFrom(
    count,
    Array.from({ length: concurrency }, () => op),
  )
}

/** Runs `count` operations from one closed-loop caller per entry of `callers` (each its own op). */
export async function timedFrom(
  count: number,
  callers: readonly ((i: number) => Promise<unknown> | unknown)[],
): Promise<Timed> {
  const samples: number[] = []
  let next = 0
  const start = performance.now()
  await Promise.all(
    callers.map(async (op) => {
      for (let i = next++; i < count; i = next++) {
        const t0 = performance.now()
        await op(i)
        samples.push(performance.now() - t0)
      }
    }),
  )
  return { samples, totalMs: performance.now() - start }
}

const payload = (i: number) => ({ kind: 'file_changed', path: `src/file-${i}.ts` })

/** BullMQ with `pending` jobs waiting. */
export async function measureBullmq(
  host: string,
  port: number,
  pending: number,
  ops: number,
): Promise<PeerSamples> {
  const name = `bench-${pending}-${Date.now()}`
  const connection = { host, port, maxRetriesPerRequest: null }
  const queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } })
  const worker = new Worker(name, null, { connection, autorun: false })
  try {
    for (let from = 0; from < pending; from += 1000) {
      const batch = Array.from({ length: Math.min(1000, pending - from) }, (_, k) => ({
        name: 'event',
        data: payload(from + k),
      }))
      await queue.addBulk(batch)
    }
    for (let i = 0; i < 10; i++) await queue.add('event', { warm: i })
    const trigger = await timed(ops, (i) => queue.add('event', payload(i)))
    const claimAckAs = (token: (i: number) => string) => async (i: number) => {
      const job = await worker.getNextJob(token(i), { block: false })
      if (job === undefined || job === null) throw new Error('BullMQ queue drained early')
      await job.moveToCompleted('ok', token(i), false)
    }
    const claimAck = await timed(
      ops,
      claimAckAs(() => 'bench-worker'),
    )
    const trigger16 = await timed(ops, (i) => queue.add('event', payload(i)), 16)
    const producers = Array.from({ length: 16 }, () => new Queue(name, { connection }))
    let trigger16Handles: Timed
    try {
      // Each producer adds one at a time, on its own connection.
      trigger16Handles = await timedFrom(
        ops,
        producers.map((producer) => (i: number) => producer.add('event', payload(i))),
      )
    } finally {
      await Promise.all(producers.map((producer) => producer.close()))
    }
    const claimAck16 = await timed(
      ops,
      claimAckAs((i) => `bench-worker-${i}`),
      16,
    )
    return { trigger, claimAck, trigger16, claimAck16, trigger16Handles }
  } finally {
    await worker.close()
    await queue.obliterate({ force: true })
    await queue.close()
  }
}

/** plainjob with `pending` jobs waiting, in a fresh database under `dir`. */
export async function measurePlainjob(
  dir: string,
  pending: number,
  ops: number,
): Promise<PeerSamples> {
  const database = new Database(join(dir, `plainjob-${pending}.db`))
  const silent = { error() {}, warn() {}, info() {}, debug() {} }
  const queue = defineQueue({ connection: better(database), logger: silent })
  try {
    for (let from = 0; from < pending; from += 1000) {
      const batch = Array.from({ length: Math.min(1000, pending - from) }, (_, k) =>
        payload(from + k),
      )
      queue.addMany('event', batch)
    }
    for (let i = 0; i < 10; i++) queue.add('event', { warm: i })
    const add = (i: number) => queue.add('event', payload(i))
    const claimAckOne = () => {
      const job = queue.getAndMarkJobAsProcessing('event')
      if (job === undefined) throw new Error('plainjob queue drained early')
      queue.markJobAsDone(job.id)
    }
    // plainjob is synchronous: 16 callers in one process run one after the other.
    const trigger = await timed(ops, add)
    const claimAck = await timed(ops, claimAckOne)
    const trigger16 = await timed(ops, add, 16)
    const claimAck16 = await timed(ops, claimAckOne, 16)
    return { trigger, claimAck, trigger16, claimAck16 }
  } finally {
    queue.close()
    database.close()
  }
}
