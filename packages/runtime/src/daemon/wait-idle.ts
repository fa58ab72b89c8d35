import type { Backend } from '@agent-state/core'
import { z } from 'zod'
import { daemonError } from '../shared/errors.js'
import { openDaemonQueue } from './daemon-queue.js'
import {
  type DaemonSnapshot,
  liveClaim,
  readDaemon,
  snapshotFrom,
  stateOf,
} from './daemon-snapshot.js'
import { onQueueChange } from './queue-signals.js'

/** Options of {@link waitForIdle}; the single source of their types. */
export const waitForIdleOptionsSchema = z.strictObject({
  /** The daemon's total iterations (acknowledged events) must reach this. Default 0. */
  minIterations: z.int().nonnegative().default(0),
  /** Give up with `WAIT_TIMEOUT` after this long. Default 5000 ms. */
  timeoutMs: z
    .int()
    .min(0)
    .max(24 * 60 * 60 * 1000)
    .default(5000),
  /** First poll interval; it doubles up to `pollMaxMs`. Default 5 ms. */
  pollMinMs: z.int().min(1).max(60_000).default(5),
  /** Longest poll interval: the worst wake-up delay for a change made by another process. Default 50 ms. */
  pollMaxMs: z.int().min(1).max(60_000).default(50),
  /** Pending events included in the returned snapshot. Default 16. */
  pageSize: z.int().min(0).max(1000).default(16),
})

/** What {@link waitForIdle} accepts. */
export type WaitForIdleOptions = z.input<typeof waitForIdleOptionsSchema>

/**
 * Resolves the daemon's snapshot once it is idle (no live delivery), its
 * queue is empty and its total iterations reach `minIterations`
 * (docs/runtime/daemons.md). The caller writes no sleep loop: the wait polls
 * the queue's records with a doubling interval (`pollMinMs` to `pollMaxMs`),
 * and a change made in this process through the same backend instance wakes
 * it at once. The Backend contract has no change notifications, so a change
 * from another process is seen within `pollMaxMs` plus one read.
 *
 * @throws `DAEMON_STOPPED` when the daemon is (or becomes) stopped, done or
 *   closed; `WAIT_TIMEOUT` (with the last counts in `context`);
 *   `DAEMON_NOT_FOUND`, `INVALID_DAEMON_ID`, `INVALID_QUEUE_OPTIONS`.
 */
export async function waitForIdle(
  backend: Backend,
  daemonId: string,
  options: WaitForIdleOptions = {},
): Promise<DaemonSnapshot> {
  const parsed = waitForIdleOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw daemonError('INVALID_QUEUE_OPTIONS', `Invalid waitForIdle option ${path}`, {
      daemonId,
      path,
    })
  }
  const { minIterations, timeoutMs, pollMinMs, pollMaxMs, pageSize } = parsed.data
  const queue = await openDaemonQueue(backend, daemonId)
  const deadline = Date.now() + timeoutMs
  let wake: (() => void) | null = null
  let changed = false
  const unsubscribe = onQueueChange(backend, daemonId, () => {
    changed = true
    wake?.()
  })
  try {
    let interval = pollMinMs
    for (;;) {
      changed = false
      const reading = await readDaemon(backend, queue)
      const state = stateOf(reading)
      if (state === 'stopped' || state === 'done' || state === 'closed') {
        throw daemonError('DAEMON_STOPPED', `Daemon ${daemonId} is ${state}`, { daemonId, state })
      }
      const queued = reading.tail.next - reading.head.head
      if (liveClaim(reading) === null && queued === 0 && reading.head.iterations >= minIterations) {
        return await snapshotFrom(queue, reading, pageSize)
      }
      const remaining = deadline - Date.now()
      if (remaining <= 0) {
        throw daemonError(
          'WAIT_TIMEOUT',
          `Daemon ${daemonId} was not idle within ${timeoutMs} ms`,
          {
            daemonId,
            timeoutMs,
            minIterations,
            totalIterations: reading.head.iterations,
            queuedEventCount: queued,
            daemonState: state,
          },
        )
      }
      if (!changed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(interval, remaining))
          function done() {
            clearTimeout(timer)
            wake = null
            resolve()
          }
          wake = done
        })
      }
      interval = changed ? pollMinMs : Math.min(interval * 2, pollMaxMs)
    }
  } finally {
    unsubscribe()
  }
}
