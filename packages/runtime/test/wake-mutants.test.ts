/**
 * The checks of wake-dispatcher.test.ts run against deliberately broken
 * dispatchers: each mutant must make its check see the failure it exists to
 * catch. Each mutant replaces one module (vi.doMock) and imports the runtime
 * afresh.
 */

import type { Backend, Lease, WriterIdentity } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { WakeRecord } from '../src/index.js'
import { wakeBucketPrefix } from '../src/shared/layout.js'
import type { ClaimTurn } from '../src/wake/claim-order.js'
import type * as DueWatch from '../src/wake/due-watch.js'
import { openDueWatch, tickDelayOf } from '../src/wake/due-watch.js'
import type * as Sweeper from '../src/wake/registration-sweeper.js'
import type * as TickTimer from '../src/wake/tick-timer.js'
import type * as WakeIndex from '../src/wake/wake-index.js'
import { sweepWakeRegistrations } from '../src/wake/wake-sweep.js'
import { mutated, unmockAll } from './mutants.js'
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
  WAKE_BACKENDS,
} from './wake-scenarios.js'

const FIRING = '../src/wake/wake-firing.ts'
const INDEX = '../src/wake/wake-index.ts'
const ORDER = '../src/wake/claim-order.ts'
const SWEEP = '../src/wake/wake-sweep.ts'
const DUE_WATCH = '../src/wake/due-watch.ts'
const TICK_TIMER = '../src/wake/tick-timer.ts'
const SWEEPER = '../src/wake/registration-sweeper.ts'
const IDLE_SLEEP = '../src/wake/idle-sleep.ts'
type InDueOrder = <T>(
  items: AsyncIterable<T>,
  limit: number,
  work: (item: T, turn: ClaimTurn) => Promise<void>,
) => Promise<void>
const encoder = new TextEncoder()

afterEach(unmockAll)

/**
 * Mutant: no lease taken (a made-up one is returned) and every write a plain
 * put, without `ifMatch` and without the lease. (Either one alone keeps the
 * frozen dispatcher out: the stale lease is `LEASE_LOST`, the stale version
 * `PRECONDITION_FAILED`; docs/runtime/wakes.md.)
 */
const noLeaseNoCondition = (original: Record<string, unknown>) => ({
  ...original,
  writeUnderLease: async (
    backend: Backend,
    key: string,
    next: WakeRecord,
    _readVersion: string,
    _lease: Lease,
    writer: WriterIdentity,
  ) => (await backend.put(key, encoder.encode(JSON.stringify(next)), { writer })).version,
  takeWake: async (
    _backend: Backend,
    key: string,
    holder: string,
    ttlMs: number,
  ): Promise<Lease> => ({
    key,
    holder,
    token: 1,
    ttlMs,
    expiresAt: Number.MAX_SAFE_INTEGER,
  }),
})

describe.each(WAKE_BACKENDS)('wake mutants on $name', (kind) => {
  it('firing without the lease and the conditional write: the race check sees wakes handled twice', async () => {
    const outcome = await raceTwoDispatchers(await mutated(FIRING, noLeaseNoCondition), kind)
    // wake-dispatcher.test.ts expects handledTwice to be [].
    expect(outcome.handledTwice.length).toBeGreaterThan(0)
  })

  it('firing without the lease and the conditional write: the frozen dispatcher records its firing after the takeover', async () => {
    const outcome = await frozenMidFire(await mutated(FIRING, noLeaseNoCondition), kind)
    // wake-dispatcher.test.ts expects 'lost', ['b'], 'dispatcher-b'.
    expect(outcome).toMatchObject({
      frozenOutcome: 'fired',
      handledBy: ['b', 'a'],
      firedBy: 'dispatcher-a',
    })
  })

  it('scanning only the first page of a bucket: the late-start check sees a due wake left for later', async () => {
    const rt = await mutated(INDEX, (original) => ({
      ...original,
      dueMarkers: async function* (
        backend: Backend,
        bucket: string,
        now: number,
        pageSize: number,
      ) {
        const prefix = wakeBucketPrefix(bucket)
        const page = await backend.list({ prefix, limit: pageSize })
        for (const entry of page.entries) {
          const wakeId = entry.key.slice(prefix.length)
          if (Number(wakeId.slice(0, 13)) > now) return
          yield { wakeId, key: entry.key }
        }
      },
    }))
    const outcome = await lateStart(rt, kind)
    // wake-dispatcher.test.ts expects wakes 0 to 4 on the first tick.
    expect(outcome.firstTick.map(([index]) => index)).toEqual([0, 1, 3, 4])
  })

  it("listing only now's bucket: the late-start check sees the late wakes never fire", async () => {
    const rt = await mutated(INDEX, (original) => ({
      ...original,
      dueBuckets: async function* (backend: Backend, now: number) {
        for await (const bucket of (original.dueBuckets as typeof WakeIndex.dueBuckets)(
          backend,
          now,
        )) {
          if (Number(bucket) + 60_000 > now) yield bucket
        }
      },
    }))
    const outcome = await lateStart(rt, kind)
    expect(outcome.firstTick).toEqual([])
  })

  it('dropping a fired wake whose handler failed: the redelivery check sees it never delivered', async () => {
    const rt = await mutated(FIRING, (original) => ({
      ...original,
      nextStep: (record: WakeRecord) => (record.state === 'pending' ? 'fire' : 'archive'),
    }))
    const outcome = await handlerFailure(rt, kind)
    // wake-dispatcher.test.ts expects 'redelivered', 2 calls, delivered.
    expect(outcome).toMatchObject({
      outcomes: ['handler-failed', 'busy', 'archived'],
      calls: 1,
      delivered: false,
    })
  })

  it('handing out cancelled wakes: the cancel check sees the cancelled wake handled', async () => {
    const rt = await mutated(FIRING, (original) => ({
      ...original,
      nextStep: (record: WakeRecord) =>
        record.state === 'cancelled'
          ? 'fire'
          : (original.nextStep as (r: WakeRecord) => string)(record),
    }))
    const outcome = await cancelledNeverFires(rt, kind)
    // wake-dispatcher.test.ts expects handled [2]. The two fire concurrently, so their
    // handlers may run in either order ([2, 1] in a clean run): which ones ran is the check.
    expect([...outcome.handled].sort((a, b) => a - b)).toEqual([1, 2])
  })

  it('firing without waiting for the earlier-due claims: the late-start check sees wakes fired before the first is claimed', async () => {
    const rt = await mutated(ORDER, (original) => ({
      ...original,
      inDueOrder: ((items, limit, work) =>
        (original.inDueOrder as InDueOrder)(items, limit, (item, turn) =>
          work(item, { claimed: turn.claimed, before: Promise.resolve() }),
        )) as InDueOrder,
    }))
    const outcome = await lateStart(rt, kind)
    // wake-dispatcher.test.ts expects [].
    expect(outcome.firedBeforeEarlierClaimed.length).toBeGreaterThan(0)
  })

  it('claiming in reverse order (a stack, not a queue): the late-start check sees the claim order broken', async () => {
    const rt = await mutated(ORDER, (original) => ({
      ...original,
      inDueOrder: (async (items, limit, work) => {
        const all: unknown[] = []
        for await (const item of items) all.push(item)
        async function* reversed() {
          yield* all.reverse()
        }
        await (original.inDueOrder as InDueOrder)(reversed(), limit, work as never)
      }) as InDueOrder,
    }))
    const outcome = await lateStart(rt, kind)
    // wake-dispatcher.test.ts expects [0, 1, 2, 3, 4].
    expect(outcome.claimOrder).toEqual([4, 3, 2, 1, 0])
  })

  it('no bound on the wakes in progress: the concurrency check sees all six handler calls at once', async () => {
    const rt = await mutated(ORDER, (original) => ({
      ...original,
      inDueOrder: ((items, _limit, work) =>
        (original.inDueOrder as InDueOrder)(items, 1_000, work)) as InDueOrder,
    }))
    expect(await boundedConcurrency(rt, kind)).toEqual({ peakInFlight: 6, fired: 6 })
  })

  it('one wake at a time (the old dispatcher): the concurrency check sees one handler call in progress', async () => {
    const rt = await mutated(ORDER, (original) => ({
      ...original,
      inDueOrder: ((items, _limit, work) =>
        (original.inDueOrder as InDueOrder)(items, 1, work)) as InDueOrder,
    }))
    expect(await boundedConcurrency(rt, kind)).toEqual({ peakInFlight: 1, fired: 6 })
  })

  it('never giving up: the give-up check sees the failing wake retried forever', async () => {
    const rt = await mutated(FIRING, (original) => ({ ...original, givesUp: () => false }))
    const outcome = await giveUpAfterAttempts(rt, kind)
    // wake-dispatcher.test.ts expects it failed on the third attempt.
    expect(outcome).toMatchObject({
      failing: Array(5).fill('handler-failed'),
      state: 'fired',
      failure: null,
    })
  })

  it('giving up on retryable failures too: the give-up check sees the retrying wake failed', async () => {
    const rt = await mutated(FIRING, (original) => ({
      ...original,
      givesUp: (attempts: number, maxAttempts: number) => attempts >= maxAttempts,
    }))
    const outcome = await giveUpAfterAttempts(rt, kind)
    // wake-dispatcher.test.ts expects it fired and retried on every tick.
    expect(outcome.retryingState).toBe('failed')
  })

  it('a sweep that completes nothing: the interrupted-registration check sees the crashed registration never fire', async () => {
    const rt = await mutated(SWEEP, (original) => ({
      ...original,
      sweepWakeRegistrations: async () => ({ scanned: 0, completed: [], errors: [] }),
    }))
    const outcome = await interruptedRegistration(rt, kind)
    // wake-dispatcher.test.ts expects ['a'] swept and fired.
    expect(outcome).toMatchObject({ sweep: [], secondTick: [], states: ['pending', 'fired'] })
  })

  it('a registration that fails on a marker already there: the interrupted-registration check sees the overtaken registrant throw and its wake cancelled', async () => {
    const rt = await mutated(SWEEP, (original) => ({
      ...original,
      indexMarker: async (backend: Backend, wakeId: string) => {
        await backend.put(
          `wakes/due/${String(Math.floor(Number(wakeId.slice(0, 13)) / 60_000) * 60_000).padStart(13, '0')}/${wakeId}`,
          new Uint8Array(0),
          { ifNoneMatch: '*' },
        )
        return true
      },
    }))
    const outcome = await interruptedRegistration(rt, kind)
    // wake-dispatcher.test.ts expects 'pending', and b fired on the first tick.
    expect(outcome).toMatchObject({ raced: 'PRECONDITION_FAILED', firstTick: [] })
  })
})

/**
 * The notified-ticks mutants run on memory only: the timer and the hint
 * reading they break are the same code over every backend (the check itself
 * runs on memory and fs), and each mutant waits out the scenario's bounds.
 */
describe('notified-tick mutants on memory', () => {
  const kind = WAKE_BACKENDS[0] as (typeof WAKE_BACKENDS)[number]

  it('ticks only on the interval (the due-time index never watched): the notified-ticks check sees no wake handled', async () => {
    const rt = await mutated(DUE_WATCH, (original) => ({
      ...original,
      openDueWatch: () => ({ notified: false, established: Promise.resolve() }),
    }))
    const outcome = await notifiedTicks(rt, kind)
    // wake-dispatcher.test.ts expects notified, and every wake handled.
    expect(outcome).toMatchObject({ notified: false, gateHandled: false, burstHandled: 0 })
  })

  it('a tick per hint, not coalesced: the notified-ticks check sees a tick for each wake of the burst', async () => {
    const rt = await mutated(TICK_TIMER, (original) => ({
      ...original,
      startTickTimer: (
        backend: Backend,
        options: Parameters<typeof TickTimer.startTickTimer>[1],
      ): TickTimer.TickTimer => {
        const controller = new AbortController()
        const watch = openDueWatch(backend, controller.signal, (hint) => {
          const delay = tickDelayOf(hint, options.met, options.clock(), options.intervalMs)
          if (delay !== null) setTimeout(() => void options.tick().catch(() => undefined), delay)
        })
        return {
          get notified() {
            return watch.notified
          },
          ready: watch.established,
          // Memory's watch pushes: nothing to close while a tick fires.
          busy: () => undefined,
          settled: () => undefined,
          stop: () => controller.abort(),
        }
      },
    }))
    const outcome = await notifiedTicks(rt, kind)
    // wake-dispatcher.test.ts expects 2: the gate's tick and one for the burst.
    expect(outcome.ticksAfterBurst).toBeGreaterThanOrEqual(21)
  })

  it("the hints of the dispatcher's own marker deletes taken as new wakes: the notified-ticks check sees extra ticks", async () => {
    const rt = await mutated(DUE_WATCH, (original) => ({
      ...original,
      tickDelayOf: (
        hint: DueWatch.DueHint,
        _met: ReadonlySet<string>,
        now: number,
        interval: number,
      ) => (original.tickDelayOf as typeof DueWatch.tickDelayOf)(hint, new Set(), now, interval),
    }))
    const outcome = await notifiedTicks(rt, kind)
    // wake-dispatcher.test.ts expects 2 and then 3.
    expect(outcome.ticksAfterBurst).toBeGreaterThan(2)
    expect(outcome.ticksAfterSoon).toBeGreaterThan(outcome.ticksAfterBurst + 1)
  })

  it('a hint of a wake due later ignored (only due-now hints tick): the notified-ticks check sees the wake due before the next tick wait for the interval', async () => {
    const rt = await mutated(DUE_WATCH, (original) => ({
      ...original,
      tickDelayOf: (
        hint: DueWatch.DueHint,
        met: ReadonlySet<string>,
        now: number,
        interval: number,
      ) => {
        const delay = (original.tickDelayOf as typeof DueWatch.tickDelayOf)(
          hint,
          met,
          now,
          interval,
        )
        return delay === 0 ? 0 : null
      },
    }))
    const outcome = await notifiedTicks(rt, kind)
    // wake-dispatcher.test.ts expects it handled, in a third tick.
    expect(outcome).toMatchObject({ gateHandled: true, soonHandled: false, ticksAfterSoon: 2 })
  })

  it('tickOnChange: false ignored: the notified-ticks check sees that dispatcher notified and the wake handled', async () => {
    const rt = await mutated(TICK_TIMER, (original) => ({
      ...original,
      startTickTimer: (backend: Backend, options: Parameters<typeof TickTimer.startTickTimer>[1]) =>
        (original.startTickTimer as typeof TickTimer.startTickTimer)(backend, {
          ...options,
          tickOnChange: true,
        }),
    }))
    const outcome = await notifiedTicks(rt, kind)
    // wake-dispatcher.test.ts expects { notified: false, handled: false }.
    expect(outcome.off).toEqual({ notified: true, handled: true })
  })

  it('watch() used without the capability claim: the notified-ticks check sees the unclaimed backend notified', async () => {
    const rt = await mutated(DUE_WATCH, (original) => ({
      ...original,
      openDueWatch: (
        backend: Backend,
        signal: AbortSignal,
        onHint: (hint: DueWatch.DueHint) => void,
      ) =>
        (original.openDueWatch as typeof DueWatch.openDueWatch)(
          new Proxy(backend, {
            get(target, property) {
              if (property === 'capabilities') {
                return {
                  ...target.capabilities,
                  changeNotification: { mode: 'push', maxDelayMs: 500 },
                }
              }
              const value = Reflect.get(target, property)
              return typeof value === 'function' ? value.bind(target) : value
            },
          }),
          signal,
          onHint,
        ),
    }))
    const outcome = await notifiedTicks(rt, kind)
    // wake-dispatcher.test.ts expects { notified: false, handled: false }.
    expect(outcome.unclaimed).toEqual({ notified: true, handled: true })
  })
})

/**
 * The idle-sleep mutants, on memory only for the same reason: the timer and
 * the hint reading are the same code over every backend.
 */
describe('idle-sleep mutants on memory', () => {
  const kind = WAKE_BACKENDS[0] as (typeof WAKE_BACKENDS)[number]

  it('a notified dispatcher that never sleeps (every pause the interval): the idle-sleep check sees a tick a second', async () => {
    const rt = await mutated(IDLE_SLEEP, (original) => ({
      ...original,
      sleepDelayOf: (_next: number | null, _now: number, intervalMs: number) => intervalMs,
    }))
    const outcome = await idleSleep(rt, kind)
    // wake-dispatcher.test.ts expects { calls: 1, ticks: 1 }.
    expect(outcome.notifiedMinute).toEqual({ calls: 60, ticks: 60 })
  })

  it('hints of wakes due after the interval ignored (the horizon taken as the interval, not the armed tick): the idle-sleep check sees the sleeper not woken in time', async () => {
    const rt = await mutated(DUE_WATCH, (original) => ({
      ...original,
      tickDelayOf: (hint: DueWatch.DueHint, met: ReadonlySet<string>, now: number) =>
        (original.tickDelayOf as typeof DueWatch.tickDelayOf)(hint, met, now, 1_000),
    }))
    const outcome = await idleSleep(rt, kind)
    // wake-dispatcher.test.ts expects 0: handled at its due time.
    expect(outcome).toMatchObject({ notified: true, sleeperLateByMs: null })
  })

  it('a dispatcher that sleeps without the watch (not notified, yet sleeping): the idle-sleep check sees the interval dispatcher sleep too', async () => {
    const rt = await mutated(TICK_TIMER, (original) => ({
      ...original,
      startTickTimer: (
        backend: Backend,
        options: Parameters<typeof TickTimer.startTickTimer>[1],
      ): TickTimer.TickTimer =>
        (original.startTickTimer as typeof TickTimer.startTickTimer)(backend, {
          ...options,
          tickOnChange: true,
        }),
    }))
    const outcome = await idleSleep(rt, kind)
    // wake-dispatcher.test.ts expects { calls: 60, ticks: 60 } with tickOnChange: false.
    expect(outcome.intervalMinute).toEqual({ calls: 1, ticks: 1 })
  })
})

/** Memory only, like the notified-tick mutants: the sweeper is the same code over every backend (the check runs on memory and fs). */
describe('dispatcher sweep mutants on memory', () => {
  const kind = WAKE_BACKENDS[0] as (typeof WAKE_BACKENDS)[number]

  it('a dispatcher that never sweeps: the dispatcher-sweep check sees the interrupted registrations never fire', async () => {
    const rt = await mutated(SWEEPER, (module) => ({
      ...module,
      startRegistrationSweeper: () => null,
    }))
    // wake-dispatcher.test.ts expects two rounds and both fired.
    expect((await dispatcherSweep(rt, kind)).on).toEqual({ swept: false, tick: [] })
  })

  it('every round from the first record (the cursor dropped): the dispatcher-sweep check sees one registration never completed', async () => {
    const rt = await mutated(SWEEPER, (module) => ({
      ...module,
      startRegistrationSweeper: (
        backend: Backend,
        options: { periodMs: number; limit: number } | null,
      ) => {
        if (options === null) return null
        let rounds = 0
        let last: Sweeper.SweepRound | null = null
        const timer = setInterval(() => {
          void sweepWakeRegistrations(backend, { limit: options.limit }).then((result) => {
            last = result
            rounds++
          })
        }, options.periodMs)
        return {
          get rounds() {
            return rounds
          },
          get last() {
            return last
          },
          async stop() {
            clearInterval(timer)
          },
        }
      },
    }))
    const outcome = await dispatcherSweep(rt, kind)
    // wake-dispatcher.test.ts expects both fired.
    expect(outcome.on.swept).toBe(true)
    expect(outcome.on.tick).toHaveLength(1)
  })

  it('sweep: null ignored (the default period used): the dispatcher-sweep check sees the off dispatcher sweep', async () => {
    const rt = await mutated(SWEEPER, (module) => ({
      ...module,
      startRegistrationSweeper: (
        backend: Backend,
        options: { periodMs: number; limit: number } | null,
      ) =>
        (module.startRegistrationSweeper as typeof Sweeper.startRegistrationSweeper)(
          backend,
          options ?? { periodMs: 100, limit: 1000 },
        ),
    }))
    const outcome = await dispatcherSweep(rt, kind)
    // wake-dispatcher.test.ts expects { rounds: 0, tick: [] }.
    expect(outcome.off.rounds).toBeGreaterThan(0)
    expect([...outcome.off.tick].sort()).toEqual(['off', 'on'])
  })
})
