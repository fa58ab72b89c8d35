/**
 * How long an idle notified dispatcher sleeps between ticks
 * (docs/runtime/wakes.md, Ticks woken by change notification). Kept apart
 * from the timer so it can be reviewed (and broken in the tests) on its own.
 */

/**
 * How long a notified dispatcher waits after a tick that left `nextDueAt` as
 * the earliest pending due time (`null`: no wake pending): until then, but
 * never sooner than `intervalMs` (the pace of an un-notified dispatcher, so
 * a wake left due, busy or failing, is retried no faster than before) and
 * never later than `idleCeilingMs`, so a hint that was missed (a watch that
 * dropped one without ending) delays a wake by at most the ceiling.
 */
export function sleepDelayOf(
  nextDueAt: number | null,
  now: number,
  intervalMs: number,
  idleCeilingMs: number,
): number {
  const until = nextDueAt === null ? idleCeilingMs : nextDueAt - now
  return Math.max(intervalMs, Math.min(idleCeilingMs, until))
}
