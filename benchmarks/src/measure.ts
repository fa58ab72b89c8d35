import { performance } from 'node:perf_hooks'
import { LatencyBuffer } from './stats.js'

/** One operation of a workload: `worker` is 0..concurrency-1, `seq` counts operations of the run. */
export type Operation = (worker: number, seq: number) => Promise<unknown>

/** How long and how wide one timed run is. */
export interface RunShape {
  readonly concurrency: number
  /** Stop issuing new operations after this many milliseconds. */
  readonly durationMs: number
  /** Stop issuing new operations after this many (a pool of prepared keys, for example). */
  readonly maxOps?: number
  /** The clock, in milliseconds; `performance.now` unless a test drives a virtual one. */
  readonly now?: () => number
}

/** What one timed run measured. */
export interface RunMeasurement {
  readonly ops: number
  /** Wall-clock time from the first issue to the last settle, in milliseconds. */
  readonly elapsedMs: number
  /** Per-operation latencies from issue to settle (see `runTimed`), in microseconds. */
  readonly latencies: LatencyBuffer
}

/** Resolves in a later macrotask, after every pending microtask has run. */
function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * Runs `op` from `concurrency` closed-loop callers until the time or the
 * operation budget is spent: each caller issues its next operation only when
 * its previous one settled, so at most `concurrency` are in flight.
 *
 * A latency is that operation's own duration: from the call into the backend
 * until the caller resumes after its promise settled, which happens before
 * the harness starts any other operation. It includes every wait inside
 * the backend and its client library (a lock, a group commit's batch, libuv's
 * thread-pool queue, the server's queue, the socket pool). It does not include
 * time the harness made a settled operation wait: above concurrency 1 a
 * caller issues its next operation from a fresh macrotask (`setImmediate`),
 * so the timestamps of operations that settled meanwhile are taken first,
 * and a backend that runs an operation synchronously (better-sqlite3) cannot
 * bill one caller for the 63 others' statements. Operations issued from
 * separate macrotasks is also how independent callers reach a library (one
 * request each); a group commit that only collects operations issued in the
 * same microtask drain sees batches of one here, as it would there.
 *
 * The first failure stops every caller and rejects: a benchmark of a broken
 * path is worthless.
 */
export async function runTimed(op: Operation, shape: RunShape): Promise<RunMeasurement> {
  const now = shape.now ?? (() => performance.now())
  const latencies = new LatencyBuffer()
  const maxOps = shape.maxOps ?? Number.POSITIVE_INFINITY
  // At concurrency 1 nothing else can run between settle and timestamp: no deferral needed.
  const defer = shape.concurrency > 1
  const started = now()
  const deadline = started + shape.durationMs
  let next = 0
  let failure: unknown
  let failed = false

  async function worker(index: number): Promise<void> {
    while (!failed) {
      // Also before the first issue: the start loop would otherwise run every
      // caller's first (possibly synchronous) operation before any timestamp.
      if (defer) await nextMacrotask()
      if (failed) return
      const seq = next
      if (seq >= maxOps) return
      const issued = now()
      if (issued >= deadline && seq > 0) return
      next = seq + 1
      try {
        await op(index, seq)
      } catch (error) {
        if (!failed) {
          failed = true
          failure = error
        }
        return
      }
      latencies.push((now() - issued) * 1000)
    }
  }

  const workers: Promise<void>[] = []
  for (let index = 0; index < shape.concurrency; index++) workers.push(worker(index))
  await Promise.all(workers)
  if (failed) throw failure
  return { ops: latencies.length, elapsedMs: now() - started, latencies }
}
