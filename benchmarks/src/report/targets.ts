import type { BackendKind } from '../subject.js'

/** The c=1 target: agent-state p50 at most this multiple of the raw client's (put, CAS, get). */
export const LATENCY_TARGET = 1.15

/**
 * The concurrent target: agent-state ops/s at least this multiple of the raw
 * client's. Above c=1 a p50 ratio compares different things: a synchronous
 * baseline (better-sqlite3, the fs sync calls) reports one statement's
 * duration and leaves out the time its callers wait behind each other, while
 * an asynchronous path's latency includes that queue. What a caller feels at
 * c=64 is the throughput, so that is what the verdict judges; the latencies
 * stay in the tables as information.
 */
export const CONCURRENT_THROUGHPUT_TARGET = 0.87

/**
 * The concurrent target of the durable writes whose batching is the backend's
 * to use (fs and SQLite put and compare-and-set: fsync per commit, and a group
 * commit or shared directory fsync can serve many callers): at least the raw
 * client's ops/s.
 */
export const DURABLE_WRITE_THROUGHPUT_TARGET = 1.0

/** The throughput target against each peer library (Keyv, unstorage). */
export const PEER_THROUGHPUT_TARGET = 1.0

const DURABLE_WRITES = new Set(['put-1KiB', 'cas'])
const BATCHING_BACKENDS = new Set<BackendKind>(['fs', 'sqlite'])

/** The measure and bound one headline cell is judged by. */
export interface RawTarget {
  /** `p50` (lower is better) at c=1, `ops/s` (higher is better) above it. */
  readonly measure: 'p50' | 'ops/s'
  /** The bound on agent-state ÷ raw. */
  readonly bound: number
}

/** Which target a headline cell (backend, workload, concurrency) is judged by. */
export function rawTargetOf(
  backend: BackendKind,
  workload: string,
  concurrency: number,
): RawTarget {
  if (concurrency <= 1) return { measure: 'p50', bound: LATENCY_TARGET }
  if (BATCHING_BACKENDS.has(backend) && DURABLE_WRITES.has(workload)) {
    return { measure: 'ops/s', bound: DURABLE_WRITE_THROUGHPUT_TARGET }
  }
  return { measure: 'ops/s', bound: CONCURRENT_THROUGHPUT_TARGET }
}

/**
 * Whether a cell meets its target, from its ratios to the raw client
 * (`undefined`: no ratio to judge, for example a failed path).
 */
export function meetsRawTarget(
  target: RawTarget,
  ratio: { readonly latency: number; readonly throughput: number } | undefined,
): boolean | undefined {
  if (ratio === undefined) return undefined
  const value = target.measure === 'p50' ? ratio.latency : ratio.throughput
  if (!Number.isFinite(value)) return undefined
  return target.measure === 'p50' ? value <= target.bound : value >= target.bound
}

/** The target as a table cell's text: `p50 ≤ 1.15×`, `ops/s ≥ 0.87×`. */
export function describeTarget(target: RawTarget): string {
  return target.measure === 'p50' ? `p50 ≤ ${target.bound}×` : `ops/s ≥ ${target.bound}×`
}
