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
}

/** What one timed run measured. */
export interface RunMeasurement {
  readonly ops: number
  /** Wall-clock time from the first issue to the last settle, in milliseconds. */
  readonly elapsedMs: number
  /** Per-operation latencies from issue to settle, in microseconds. */
  readonly latencies: LatencyBuffer
}

/**
 * Runs `op` from `concurrency` closed-loop workers until the time or the
 * operation budget is spent. Each latency runs from issue to settle, so at
 * concurrency 64 it includes client-side queueing. The first failure stops
 * every worker and rejects: a benchmark of a broken path is worthless.
 */
export async function runTimed(op: Operation, shape: RunShape): Promise<RunMeasurement> {
  const latencies = new LatencyBuffer()
  const maxOps = shape.maxOps ?? Number.POSITIVE_INFINITY
  const started = performance.now()
  const deadline = started + shape.durationMs
  let next = 0
  let failure: unknown
  let failed = false

  async function worker(index: number): Promise<void> {
    while (!failed) {
      const seq = next
      if (seq >= maxOps) return
      const issued = performance.now()
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
      latencies.push((performance.now() - issued) * 1000)
    }
  }

  const workers: Promise<void>[] = []
  for (let index = 0; index < shape.concurrency; index++) workers.push(worker(index))
  await Promise.all(workers)
  if (failed) throw failure
  return { ops: latencies.length, elapsedMs: performance.now() - started, latencies }
}
