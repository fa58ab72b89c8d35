/**
 * The wake dispatcher's core on the memory backend and the filesystem, with a
 * manual clock that moves due times and lease expiry alike. Each check is
 * also run against a broken dispatcher in wake-mutants.test.ts.
 */

import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import {
  boundedConcurrency,
  cancelledNeverFires,
  dispatcherSweep,
  frozenMidFire,
  giveUpAfterAttempts,
  handlerFailure,
  idleSleep,
  interruptedRegistration,
  lateStart,
  notifiedTicks,
  raceTwoDispatchers,
  T0,
  WAKE_BACKENDS,
} from './wake-scenarios.js'

describe.each(WAKE_BACKENDS)('wakes on $name', (kind) => {
  it('two dispatchers racing over the same due wakes fire and deliver each exactly once', async () => {
    const outcome = await raceTwoDispatchers(runtime, kind)
    expect(outcome).toEqual({
      registered: 30,
      handledTwice: [],
      neverHandled: 0,
      badRecords: 0,
      indexLeft: 0,
      errors: 0,
    })
  })

  it('wakes due while no dispatcher ran fire on its first tick, every page of every bucket, claimed in due order, none fired before an earlier-due one is claimed, lateness recorded', async () => {
    const outcome = await lateStart(runtime, kind)
    // Due 1, 2, 3, 61 and 62 s after T0; the dispatcher starts at T0 + 180.5 s.
    const lateness = [179_500, 178_500, 177_500, 119_500, 118_500]
    expect(outcome).toEqual({
      firstTick: lateness.map((ms, index) => [index, ms]),
      claimOrder: [0, 1, 2, 3, 4],
      firedBeforeEarlierClaimed: [],
      recordedLateness: lateness,
      futureState: ['pending', 'fired'],
      indexLeft: 0,
    })
  })

  it('a tick works on `concurrency` wakes at once: three handler calls in progress together, never more', async () => {
    expect(await boundedConcurrency(runtime, kind)).toEqual({ peakInFlight: 3, fired: 6 })
  })

  it('a wake whose handler keeps failing non-retryably is recorded failed on attempt maxAttempts and never handed out again; a retryable failure is retried', async () => {
    const outcome = await giveUpAfterAttempts(runtime, kind)
    expect(outcome).toEqual({
      failing: ['handler-failed', 'handler-failed', 'failed', undefined, undefined],
      state: 'failed',
      failure: {
        failedAt: T0 + 2_000 + 2 * 1_001,
        attempts: 3,
        code: 'WAKE_CORRUPT',
        message: 'The payload fails its schema',
        audited: false,
      },
      retrying: Array(5).fill('handler-failed'),
      retryingState: 'fired',
      indexLeft: 1,
    })
  })

  it('an interrupted registration is completed by the sweep, also one overtaken by it mid-registration, and then fires', async () => {
    expect(await interruptedRegistration(runtime, kind)).toEqual({
      raced: 'pending',
      racedSweep: ['b'],
      firstTick: ['b'],
      sweep: ['a'],
      secondTick: ['a'],
      states: ['fired', 'fired'],
      indexLeft: 0,
    })
  })

  it('ticks woken by change notification: a wake due now is handled without waiting for the interval, a burst during a tick costs one more tick, the own marker deletes none, a wake due before the next tick at its due time; no notification, only the interval', async () => {
    expect(await notifiedTicks(runtime, kind)).toEqual({
      notified: true,
      gateHandled: true,
      burstHandled: 20,
      ticksAfterBurst: 2,
      soonHandled: true,
      ticksAfterSoon: 3,
      off: { notified: false, handled: false },
      unclaimed: { notified: false, handled: false },
    })
  })

  it('an idle notified dispatcher sleeps until its next wake or its ceiling (1 tick and 1 backend call in a minute, against 60 at the interval), and a wake registered while it sleeps fires on time, woken by its hint', async () => {
    expect(await idleSleep(runtime, kind)).toEqual({
      notified: true,
      notifiedMinute: { calls: 1, ticks: 1 },
      intervalMinute: { calls: 60, ticks: 60 },
      sleeperLateByMs: 0,
    })
  })

  it("the dispatcher's own slow sweep completes interrupted registrations page by page, which then fire; sweep: null sweeps nothing", async () => {
    expect(await dispatcherSweep(runtime, kind)).toEqual({
      on: { swept: true, tick: ['off', 'on'] },
      off: { rounds: 0, tick: [] },
    })
  })

  it('a cancelled wake never fires, also when its marker outlived the cancel; cancelling a fired wake returns it fired', async () => {
    const outcome = await cancelledNeverFires(runtime, kind)
    expect(outcome).toEqual({
      cancelResult: 'cancelled',
      handled: [2],
      states: ['cancelled', 'cancelled', 'fired'],
      cancelAfterFire: 'fired',
      indexLeft: 0,
    })
  })

  it('a dispatcher frozen before its firing write cannot record it after another took the wake over', async () => {
    const outcome = await frozenMidFire(runtime, kind)
    expect(outcome).toEqual({
      frozenOutcome: 'lost',
      handledBy: ['b'],
      firedBy: 'dispatcher-b',
      tokenIsTakers: true,
    })
  })

  it('a wake whose handler failed stays fired and is delivered again once the lease expired, its firing unchanged', async () => {
    const outcome = await handlerFailure(runtime, kind)
    expect(outcome).toEqual({
      outcomes: ['handler-failed', 'busy', 'redelivered'],
      calls: 2,
      attempts: 2,
      delivered: true,
      firingKept: true,
      indexLeft: 0,
    })
  })
})

describe('wake records', () => {
  it('a corrupt record is WAKE_CORRUPT, never an empty or skipped wake', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore() })
    const wake = await runtime.registerWake(backend, {
      target: { kind: 'worker', workerId: 'w1' },
      cause: 'timeout',
      dueAt: 1_000,
    })
    await backend.put(
      `wakes/records/${wake.id}`,
      new TextEncoder().encode('{"format":"agent-state/wake"}'),
    )
    await expect(runtime.getWake(backend, wake.id)).rejects.toMatchObject({ code: 'WAKE_CORRUPT' })
    const dispatcher = runtime.startWakeDispatcher(backend, {
      handlers: { timeout: async () => undefined },
      intervalMs: null,
    })
    const report = await dispatcher.tick()
    await dispatcher.stop()
    expect(report.outcomes).toEqual([])
    expect(report.errors.map((entry) => (entry.error as { code?: string }).code)).toEqual([
      'WAKE_CORRUPT',
    ])
  })

  it('an invalid registration is INVALID_WAKE naming the field', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore() })
    await expect(
      runtime.registerWake(backend, {
        target: { kind: 'worker', workerId: '../escape' },
        cause: 'timeout',
        dueAt: 1_000,
      }),
    ).rejects.toMatchObject({ code: 'INVALID_WAKE', context: { path: 'target.workerId' } })
    await expect(
      runtime.registerWake(backend, {
        target: { kind: 'daemon', daemonId: 'd1' },
        cause: 'interval',
        dueAt: 1_000,
        payload: 'x'.repeat(runtime.MAX_WAKE_PAYLOAD_BYTES),
      }),
    ).rejects.toMatchObject({ code: 'INVALID_WAKE', context: { path: 'payload' } })
    await expect(runtime.getWake(backend, 'not-a-wake')).rejects.toMatchObject({
      code: 'INVALID_WAKE_ID',
    })
  })
})
