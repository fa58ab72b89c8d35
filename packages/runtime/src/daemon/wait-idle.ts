import type { Backend } from '@agent-state/core'
import { z } from 'zod'
import { daemonError } from '../shared/errors.js'
import { openChangeWaiter } from './change-waiter.js'
import { readDaemonQueue } from './daemon-queue.js'
import {
  type DaemonSnapshot,
  liveClaim,
  readDaemon,
  snapshotFrom,
  stateOf,
} from './daemon-snapshot.js'

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
  /** First poll interval where the backend has no change notification; it doubles up to `pollMaxMs`. Default 5 ms. */
  pollMinMs: z.int().min(1).max(60_000).default(5),
  /**
   * Longest poll interval where the backend has no change notification: the
   * worst wake-up delay for a change made by another process there. Default 50 ms.
   */
  pollMaxMs: z.int().min(1).max(60_000).default(50),
  /** Pending events included in the returned snapshot. Default 16. */
  pageSize: z.int().min(0).max(1000).default(16),
})

/** What {@link waitForIdle} accepts. */
export type WaitForIdleOptions = z.input<typeof waitForIdleOptionsSchema>

/**
 * Resolves the daemon's snapshot once it is idle (no live delivery), its
 * queue is empty and its total iterations reach `minIterations`
 * (docs/runtime/daemons.md). The caller writes no sleep loop: the wait reads
 * the daemon's records again on every change notification of the backend
 * (`backend.watch`, where `capabilities.changeNotification` is claimed) and
 * on every change made through the same backend instance in this process.
 * Only where the backend has no notification does it poll, with an
 * interval doubling from `pollMinMs` to `pollMaxMs`.
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
  const queue = await readDaemonQueue(backend, daemonId)
  const deadline = Date.now() + timeoutMs
  const waiter = openChangeWaiter(backend, daemonId)
  try {
    let interval = pollMinMs
    for (;;) {
      waiter.reset()
      const reading = await readDaemon(backend, queue)
      const state = stateOf(reading)
      if (state === 'stopped' || state === 'done' || state === 'closed') {
        throw daemonError('DAEMON_STOPPED', `Daemon ${daemonId} is ${state}`, { daemonId, state })
      }
      const queued = reading.tail.next - reading.head.head
      // Idle is only ever reached by a write (an ack moves the head; a lapsing delivery
      // lease leaves its event queued), so a notified waiter needs no poll at all.
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
      const changed = await waiter.wait(waiter.notified ? remaining : Math.min(interval, remaining))
      interval = changed ? pollMinMs : Math.min(interval * 2, pollMaxMs)
    }
  } finally {
    waiter.close()
  }
}
