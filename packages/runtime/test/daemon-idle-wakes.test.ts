/**
 * Daemon idle wakes on the memory backend and the filesystem with a manual
 * clock: interval ticks, the idle watchdog, watched paths (polled and
 * notified) and their validation. Each check is also run against a broken
 * runtime in daemon-idle-wakes-mutants.test.ts.
 */
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import {
  daemonWakeValidation,
  intervalTicks,
  notifiedPathChange,
  pathChanges,
  watchdogTrips,
} from './daemon-idle-wakes-scenarios.js'
import { WAKE_WINDOW_MS } from './daemon-wake-scenarios.js'
import { WAKE_BACKENDS } from './wake-scenarios.js'

describe.each(WAKE_BACKENDS)('daemon idle wakes on $name', (kind) => {
  it('an interval wake enqueues one tick carrying its wake id; a redelivery and a busy daemon never pile ticks up', async () => {
    expect(await intervalTicks(runtime, kind)).toEqual({
      before: { queued: 0, pending: 1 },
      firstEventMatches: true,
      redelivery: 'stale',
      afterRedelivery: { queued: 0, pending: 1 },
      busy: [
        [1, 1],
        [1, 1],
        [1, 1],
      ],
    })
  })

  it('idleWatchdogAttempts misses in a row trip the watchdog and stop the chain; a resume re-arms it', async () => {
    expect(await watchdogTrips(runtime, kind)).toEqual({
      ticks: [
        [0, false, true],
        [1, false, true],
        [2, true, false],
        [2, true, false],
      ],
      queued: 1,
      rearmed: [true, true],
    })
  })

  it('watched paths, polled: two bursts coalesce into one event with the wake id; a later delete is its own event', async () => {
    expect(await pathChanges(runtime, kind)).toEqual({
      notified: false,
      afterBursts: 1,
      burstEvent: ['path_changed', true],
      deletedPaths: ['inbox/seed'],
      pendingLeft: 0,
    })
  })

  it('watched paths, notified: one write registers a path wake with a one-hour poll', async () => {
    expect(await notifiedPathChange(runtime, kind, WAKE_WINDOW_MS)).toEqual({
      notified: true,
      woken: true,
    })
  })

  it('invalid idle-wake options are refused naming the field', async () => {
    expect(await daemonWakeValidation(runtime, kind)).toEqual({
      zeroAttempts: 'INVALID_QUEUE_OPTIONS:idleWatchdogAttempts',
      noInterval: 'INVALID_QUEUE_OPTIONS:idleWatchdogAttempts',
      noPaths: 'INVALID_WAKE:watchPaths',
    })
  })
})
