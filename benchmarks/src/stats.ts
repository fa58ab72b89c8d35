/**
 * Order statistics for the benchmark report. Latencies are in microseconds.
 */

/** The value at quantile `q` (0..1) of an ascending array, by the nearest-rank method. */
export function quantileSorted(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))
  return sorted[rank] as number
}

/** Sorts a copy of the numbers ascending (numeric, not lexicographic). */
export function sortedCopy(values: ArrayLike<number>): Float64Array {
  const copy = Float64Array.from(values)
  copy.sort()
  return copy
}

/** The median of a list of numbers; `NaN` for an empty list. */
export function median(values: readonly number[]): number {
  const finite = values.filter((value) => Number.isFinite(value))
  if (finite.length === 0) return Number.NaN
  const sorted = sortedCopy(finite)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2
}

/** A growable buffer of latencies without per-sample allocation. */
export class LatencyBuffer {
  private data = new Float64Array(4096)
  private size = 0

  /** Appends one latency, in microseconds. */
  push(micros: number): void {
    if (this.size === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2)
      bigger.set(this.data)
      this.data = bigger
    }
    this.data[this.size++] = micros
  }

  /** How many latencies were recorded. */
  get length(): number {
    return this.size
  }

  /** The recorded latencies, sorted ascending (a copy). */
  sorted(): Float64Array {
    const copy = this.data.slice(0, this.size)
    copy.sort()
    return copy
  }
}

/** A figure measured in several full runs: the median and the range it moved in. */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
  /** How many finite values the figure comes from. */
  readonly n: number
}

/**
 * The median, minimum and maximum of the finite values (a failed run's `NaN`
 * is left out and lowers `n`); all `NaN` with `n` 0 when none is finite.
 */
export function spreadOf(values: readonly number[]): Spread {
  const finite = values.filter((value) => Number.isFinite(value))
  if (finite.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN, n: 0 }
  return {
    median: median(finite),
    min: Math.min(...finite),
    max: Math.max(...finite),
    n: finite.length,
  }
}
