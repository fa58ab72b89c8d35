import { median } from './stats.js'

/** What {@link closedLoop} measured: the client's CPU per operation, the rate and the median latency. */
export interface ClosedLoopCost {
  readonly usPerOp: number
  readonly opsPerSec: number
  readonly p50Ms: number
}

/**
 * Runs `ops` calls of `op` from `concurrency` callers, each issuing its next
 * call as soon as its last one resolves, and reports this process's CPU time
 * per call. At high concurrency the client's one thread is the throughput, so
 * CPU per call (which load barely moves) says where a gap to a raw client is.
 * `op` receives the call's index modulo `keys`.
 */
export async function closedLoop(
  op: (index: number) => Promise<unknown>,
  options: { readonly concurrency: number; readonly ops: number; readonly keys: number },
): Promise<ClosedLoopCost> {
  let next = 0
  const latencies: number[] = []
  const start = process.cpuUsage()
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: options.concurrency }, async () => {
      while (next < options.ops) {
        const index = next++
        const began = performance.now()
        await op(index % options.keys)
        latencies.push(performance.now() - began)
      }
    }),
  )
  const cpu = process.cpuUsage(start)
  return {
    usPerOp: (cpu.user + cpu.system) / options.ops,
    opsPerSec: options.ops / ((performance.now() - t0) / 1000),
    p50Ms: median(latencies),
  }
}
