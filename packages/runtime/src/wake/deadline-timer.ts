/**
 * A timer that never runs its callback before its deadline. Node runs a
 * timer once the event loop's millisecond clock (truncated) has reached
 * the timer's start plus its delay, so a `setTimeout(fn, d)` may run up to
 * a millisecond before `d` ms have passed on `Date.now()` or
 * `performance.now()`. The dispatcher arms its timer for a hinted wake's
 * due time; a tick a millisecond early finds the wake not due and sleeps at
 * least `intervalMs`, so the wake was late by the interval (often: see
 * test/wake-late-armed.test.ts). So the callback runs only once the
 * monotonic clock has reached the deadline, re-armed for the rest when the
 * timer ran early. Kept apart from the tick timer so it can be reviewed (and
 * broken in the tests) on its own.
 */

/** A started deadline timer. */
export interface DeadlineTimer {
  /** Cancels the timer; the callback will not run. Idempotent. */
  clear(): void
}

/**
 * Runs `fire` once, asynchronously, when `performance.now()` has reached
 * `deadlineMs` (a `performance.now()` value), never before. Unreferenced,
 * like a socket's `unref`: the timer alone does not keep a process alive.
 */
export function startDeadlineTimer(deadlineMs: number, fire: () => void): DeadlineTimer {
  let handle: NodeJS.Timeout | undefined
  const wait = (ms: number): void => {
    handle = setTimeout(check, Math.max(0, Math.ceil(ms)))
    handle.unref?.()
  }
  const check = (): void => {
    const remainingMs = deadlineMs - performance.now()
    if (remainingMs > 0) wait(remainingMs)
    else {
      handle = undefined
      fire()
    }
  }
  wait(deadlineMs - performance.now())
  return {
    clear() {
      if (handle !== undefined) clearTimeout(handle)
      handle = undefined
    },
  }
}
