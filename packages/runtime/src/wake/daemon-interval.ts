import { daemonError } from '../shared/errors.js'

/**
 * The decisions of a daemon's interval wake (docs/runtime/wakes.md, Daemon
 * wakes), apart from their reads and writes so each is one small rule.
 */

/** The registration fields the interval decisions read. */
export interface IntervalState {
  readonly intervalWakeId: string | null
  readonly missedIntervals: number
  readonly idleWatchdogAttempts: number | null
}

/** What one interval wake does. */
export interface IntervalDecision {
  /** Enqueue the tick: only into an empty queue, so ticks never pile up. */
  readonly enqueue: boolean
  /** Interval wakes in a row that found the queue not empty, this one included. */
  readonly missed: number
  /** The watchdog trips: no next wake until the daemon resumes. */
  readonly tripped: boolean
}

/**
 * Whether `wakeId` is the interval wake the registration names: only that
 * one acts. Any other (a redelivery after the chain moved on, a wake left by
 * a registrant killed before naming it) is stale, so the chain stays one.
 */
export function isCurrentIntervalWake(state: IntervalState, wakeId: string): boolean {
  return state.intervalWakeId === wakeId
}

/** The decision of the current interval wake, given how many events the daemon's queue holds. */
export function decideInterval(state: IntervalState, queuedCount: number): IntervalDecision {
  const enqueue = queuedCount === 0
  const missed = enqueue ? 0 : state.missedIntervals + 1
  const tripped = state.idleWatchdogAttempts !== null && missed >= state.idleWatchdogAttempts
  return { enqueue, missed, tripped }
}

/** Largest `idleWatchdogAttempts` accepted. */
export const MAX_IDLE_WATCHDOG_ATTEMPTS = 1_000_000

/**
 * Checks `spawnDaemon`'s `idleWatchdogAttempts`: absent, or an integer from 1
 * to {@link MAX_IDLE_WATCHDOG_ATTEMPTS} on a daemon with `wakeIntervalMs`
 * (it counts interval wakes, so without an interval it would never act).
 *
 * @throws `INVALID_QUEUE_OPTIONS` with `context.path` `idleWatchdogAttempts`.
 */
export function assertIdleWatchdog(
  attempts: number | undefined,
  intervalMs: number | null | undefined,
  daemonId: string,
): void {
  if (attempts === undefined) return
  if (
    Number.isInteger(attempts) &&
    attempts >= 1 &&
    attempts <= MAX_IDLE_WATCHDOG_ATTEMPTS &&
    intervalMs !== undefined &&
    intervalMs !== null
  ) {
    return
  }
  throw daemonError(
    'INVALID_QUEUE_OPTIONS',
    `idleWatchdogAttempts must be an integer from 1 to ${MAX_IDLE_WATCHDOG_ATTEMPTS}, with wakeIntervalMs`,
    { daemonId, path: 'idleWatchdogAttempts' },
  )
}
