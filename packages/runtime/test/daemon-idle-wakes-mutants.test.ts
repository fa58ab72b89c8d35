/**
 * The checks of daemon-idle-wakes.test.ts run against deliberately broken
 * runtimes: each mutant must make its check see the failure it exists to
 * catch.
 */
import type { Backend, Clock } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { IntervalDecision, IntervalState } from '../src/wake/daemon-interval.js'
import { registerWake } from '../src/wake/wake-registry.js'
import {
  daemonWakeValidation,
  intervalTicks,
  notifiedPathChange,
  pathChanges,
  watchdogTrips,
} from './daemon-idle-wakes-scenarios.js'
import { mutated, unmockAll } from './mutants.js'
import { WAKE_BACKENDS } from './wake-scenarios.js'

const INTERVAL = '../src/wake/daemon-interval.ts'
const DAEMON_WAKES = '../src/wake/daemon-wakes.ts'
const KEY_WATCH = '../src/wake/key-watch.ts'

afterEach(unmockAll)

/** Mutant: an interval wake enqueues its tick whatever the queue holds. */
const enqueueAlways = () =>
  mutated(INTERVAL, (original) => ({
    ...original,
    decideInterval: (state: IntervalState): IntervalDecision => ({
      enqueue: true,
      missed: 0,
      tripped: state.idleWatchdogAttempts === 0,
    }),
  }))

/** Mutant: every interval wake acts, also one the chain moved past (a redelivery). */
const noStaleCheck = () =>
  mutated(INTERVAL, (original) => ({ ...original, isCurrentIntervalWake: () => true }))

/** Mutant: the watchdog never trips. */
const noWatchdog = () =>
  mutated(INTERVAL, (original) => {
    const decide = original.decideInterval as (s: IntervalState, q: number) => IntervalDecision
    return {
      ...original,
      decideInterval: (state: IntervalState, queued: number) => ({
        ...decide(state, queued),
        tripped: false,
      }),
    }
  })

/** Mutant: every noted path change registers its own wake (no coalescing into the pending one). */
const noCoalescing = () =>
  mutated(DAEMON_WAKES, (original) => ({
    ...original,
    notePathChange: async (
      backend: Backend,
      daemonId: string,
      paths: readonly string[],
      options: { clock: Clock; debounceMs: number },
    ) =>
      (
        await registerWake(backend, {
          target: { kind: 'daemon', daemonId },
          cause: 'event',
          dueAt: options.clock() + options.debounceMs,
          payload: { kind: 'path_changed', paths: [...paths].sort(), morePaths: 0 },
          clock: options.clock,
        })
      ).id,
  }))

/** Mutant: the listing diff sees written and added keys only, not deleted ones. */
const noDeletes = () =>
  mutated(KEY_WATCH, (original) => ({
    ...original,
    diffVersions: (before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>) =>
      [...after].filter(([key, version]) => before.get(key) !== version).map(([key]) => key),
  }))

/** Mutant: the backend's change notification is ignored (the watch only polls). */
const notificationIgnored = () =>
  mutated(KEY_WATCH, (original) => ({
    ...original,
    openKeyWatch: () => ({ notified: false, established: Promise.resolve() }),
  }))

/** Mutant: `idleWatchdogAttempts` is not checked. */
const noWatchdogCheck = () =>
  mutated(INTERVAL, (original) => ({ ...original, assertIdleWatchdog: () => undefined }))

describe.each(WAKE_BACKENDS)('daemon idle wake mutants on $name', (kind) => {
  it('ticks enqueued whatever the queue holds: the busy daemon piles them up', async () => {
    const outcome = await intervalTicks(await enqueueAlways(), kind)
    // daemon-idle-wakes.test.ts expects one queued tick at each of the three.
    expect(outcome.busy.map(([queued]) => queued)).toEqual([1, 2, 3])
  })

  it('no stale check: the redelivered first wake enqueues a second tick', async () => {
    const outcome = await intervalTicks(await noStaleCheck(), kind)
    expect(outcome.afterRedelivery.queued).toBe(1)
  })

  it('no watchdog: the chain goes on past idleWatchdogAttempts misses', async () => {
    const outcome = await watchdogTrips(await noWatchdog(), kind)
    expect(outcome.ticks[2]).toEqual([2, false, true])
  })

  it('no coalescing: the second burst gets its own event (more when a burst spans listings)', async () => {
    const outcome = await pathChanges(await noCoalescing(), kind)
    // daemon-idle-wakes.test.ts expects 1.
    expect(outcome.afterBursts).toBeGreaterThanOrEqual(2)
  })

  it('deletes not diffed: the deleted key wakes nothing', async () => {
    const outcome = await pathChanges(await noDeletes(), kind)
    expect(outcome.deletedPaths).toEqual([])
  })

  it('notification ignored: a one-hour poll misses the write', async () => {
    expect(await notifiedPathChange(await notificationIgnored(), kind, 1000)).toEqual({
      notified: false,
      woken: false,
    })
  })

  it('idleWatchdogAttempts unchecked: the invalid spawns are accepted', async () => {
    const outcome = await daemonWakeValidation(await noWatchdogCheck(), kind)
    expect([outcome.zeroAttempts, outcome.noInterval]).toEqual([null, null])
  })
})
