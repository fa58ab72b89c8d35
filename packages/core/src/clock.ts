/**
 * A clock returning milliseconds since the epoch (an integer, like
 * `Date.now()`). Backends whose leases use the `host` clock take one as an
 * option (`clock`) for `updatedAt` and lease expiry, so tests can move time by
 * hand: the contract suite passes `ctx.clock`, which such a backend must use.
 * It must never go backwards.
 *
 * @example
 * ```ts
 * const clock = createManualClock()
 * const backend = createRecordBackend(store, { clock: clock.now })
 * clock.advance(60_000) // every lease with a ttl up to a minute has expired
 * ```
 */
export type Clock = () => number

/** The real wall clock. */
export const systemClock: Clock = () => Date.now()

/** A clock that only moves when told to; for tests of lease expiry. */
export interface ManualClock {
  /** Reads the clock; pass this as a backend's `clock` option. */
  readonly now: Clock
  /** Moves the clock forward by `ms` milliseconds. */
  advance(ms: number): void
  /** Sets the clock to `ms`; it may not go backwards. */
  set(ms: number): void
}

/** Creates a {@link ManualClock} starting at `start` (default: now). */
export function createManualClock(start: number = Date.now()): ManualClock {
  let current = start
  return {
    now: () => current,
    advance(ms) {
      if (!(ms >= 0)) throw new RangeError('a manual clock only moves forward')
      current += ms
    },
    set(ms) {
      if (!(ms >= current)) throw new RangeError('a manual clock only moves forward')
      current = ms
    },
  }
}
