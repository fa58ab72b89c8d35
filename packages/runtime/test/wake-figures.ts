/** Helpers of the wake kill-cycle test and the wake latency benchmark: listings and percentiles. */
import type { Backend } from '@agent-state/core'

/** Every key under `prefix`, following the cursor. */
export async function listAll(backend: Backend, prefix: string): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list({ prefix, ...(cursor === undefined ? {} : { cursor }) })
    keys.push(...page.entries.map((entry) => entry.key))
    cursor = page.cursor
  } while (cursor !== undefined)
  return keys
}

/** The `q` quantile (0 to 1) of `values`, nearest rank; `NaN` when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN
}

/** `p50 <ms> ms, p99 <ms> ms, max <ms> ms` of lateness values. */
export function latencySummary(values: readonly number[]): string {
  const max = values.length === 0 ? Number.NaN : Math.max(...values)
  return `p50 ${quantile(values, 0.5)} ms, p99 ${quantile(values, 0.99)} ms, max ${max} ms`
}
