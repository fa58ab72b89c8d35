import { DEFAULT_BUSY_TIMEOUT_MS } from './options.js'

/**
 * The write step a stepped SQLite backend reports to the contract suite's
 * frozen-writer tier: `in-transaction`, reported by the backend's clock, which
 * every write reads inside its IMMEDIATE transaction (so a holder stopping
 * itself there is frozen holding the database lock). The package's own suite
 * and `agent-state verify` both run the tier with it.
 */
export const SQLITE_WRITE_STEPS: readonly string[] = ['in-transaction']

/** A clock that reports the step `in-transaction` each time it is read: see {@link SQLITE_WRITE_STEPS}. */
export function steppedSqliteClock(onStep: (step: string) => void): () => number {
  return () => {
    onStep('in-transaction')
    return Date.now()
  }
}

/**
 * SQLite's declared limitation of the frozen-writer tier (README, Caveats): a
 * holder frozen inside its write transaction keeps the database lock, so no
 * takeover is possible until it wakes; every contender blocked by it fails
 * within the busy timeout (+ 1 s) with `UNAVAILABLE` saying so. The contract
 * suite verifies exactly this and reports it as a declared limitation, never
 * as a pass.
 */
export function sqliteFrozenWriterLimitation(busyTimeoutMs: number = DEFAULT_BUSY_TIMEOUT_MS): {
  readonly code: 'UNAVAILABLE'
  readonly message: RegExp
  readonly busyTimeoutMs: number
} {
  return { code: 'UNAVAILABLE', message: /a process holds the database lock/, busyTimeoutMs }
}
