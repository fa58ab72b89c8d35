/**
 * The wake dispatcher's checks as scenarios that return what they saw (plain
 * data): wake-dispatcher.test.ts expects the correct outcome of each, and
 * wake-mutants.test.ts runs them against deliberately broken dispatchers and
 * expects the failure each one exists to catch. Every scenario takes the
 * runtime module to use, so a mutant is a runtime imported afresh with one
 * module replaced.
 */

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as realSleep } from 'node:timers/promises'
import {
  AgentStateError,
  type Backend,
  createManualClock,
  type ManualClock,
} from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { vi } from 'vitest'
import type * as RuntimeModule from '../src/index.js'

/** The runtime module a scenario runs against (the real one, or one with a mutated module). */
export type Runtime = typeof RuntimeModule

/** Storage shared by every instance a scenario opens (two instances: two dispatchers' processes). */
export interface WakeStorage {
  open(): Backend
  cleanup(): Promise<void>
}

/** A backend kind the wake checks run on, opened with the scenario's manual clock (the lease clock too). */
export interface WakeBackendKind {
  readonly name: string
  setup(clock: ManualClock): WakeStorage
}

function tracked(make: () => Backend, remove: () => void): WakeStorage {
  const opened: Backend[] = []
  return {
    open() {
      const backend = make()
      opened.push(backend)
      return backend
    },
    async cleanup() {
      for (const backend of opened) await backend.close()
      remove()
    },
  }
}

/**
 * Memory and the filesystem: the backends whose lease clock is the `host` clock, so the
 * scenario's manual clock moves lease expiry as well as due times (no real waiting).
 */
export const WAKE_BACKENDS: readonly WakeBackendKind[] = [
  {
    name: 'memory',
    setup(clock) {
      const store = createMemoryStore()
      return tracked(
        () => createMemoryBackend({ store, namespace: 'wakes', clock: clock.now }),
        () => undefined,
      )
    },
  },
  {
    name: 'fs',
    setup(clock) {
      const root = mkdtempSync(join(tmpdir(), 'agent-state-runtime-wakes-'))
      return tracked(
        () => createFsBackend({ root, namespace: 'wakes', clock: clock.now }),
        () => rmSync(root, { recursive: true, force: true }),
      )
    },
  },
]

/** A start time on a bucket boundary, so each scenario knows which bucket a due time falls in. */
export const T0 = 1_800_000_000_000 - (1_800_000_000_000 % 60_000)

/** Resolves after `ms` of real time (what a poll or a child process needs; the clock is manual). */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits (real time, at most `ms`) until `check` holds; resolves whether it did. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  ms = 5000,
): Promise<boolean> {
  const deadline = Date.now() + ms
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await sleep(5)
  }
}

/** Runs `body` on a fresh storage of `kind` with a manual clock at {@link T0}, then cleans it up. */
export async function withStorage<T>(
  kind: WakeBackendKind,
  body: (storage: WakeStorage, clock: ManualClock) => Promise<T>,
): Promise<T> {
  const clock = createManualClock(T0)
  const storage = kind.setup(clock)
  try {
    return await body(storage, clock)
  } finally {
    await storage.cleanup()
  }
}

/** The keys left in the due-time index. */
async function indexKeys(backend: Backend): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list({
      prefix: 'wakes/due/',
      ...(cursor === undefined ? {} : { cursor }),
    })
    keys.push(...page.entries.map((entry) => entry.key))
    cursor = page.cursor
  } while (cursor !== undefined)
  return keys
}

/** What the race scenario saw. */
export interface RaceOutcome {
  readonly registered: number
  /** Wake ids whose handler ran more than once, with how many times. */
  readonly handledTwice: ReadonlyArray<readonly [string, number]>
  /** Wake ids never handled. */
  readonly neverHandled: number
  /** Records not `fired` with one attempt, delivered, by one of the two dispatchers. */
  readonly badRecords: number
  readonly indexLeft: number
  readonly errors: number
}

/**
 * Two dispatchers (two backend instances over one storage) tick at the same
 * moment over the same 30 due wakes spread over four buckets, with a page
 * size of 4 and a handler that takes 30 ms (so the other dispatcher reaches a
 * wake while its handler runs). Then each ticks once more.
 */
export async function raceTwoDispatchers(rt: Runtime, kind: WakeBackendKind): Promise<RaceOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const registrar = storage.open()
    const ids: string[] = []
    for (let i = 0; i < 30; i++) {
      const wake = await rt.registerWake(registrar, {
        target: { kind: 'worker', workerId: `w${i}` },
        cause: 'timeout',
        dueAt: T0 + i * 7_000,
        clock: clock.now,
      })
      ids.push(wake.id)
    }
    clock.set(T0 + 240_000)
    const calls = new Map<string, number>()
    const handlers = {
      timeout: async (wake: { id: string }) => {
        calls.set(wake.id, (calls.get(wake.id) ?? 0) + 1)
        await sleep(30)
      },
    }
    const dispatchers = ['dispatcher-a', 'dispatcher-b'].map((dispatcherId) =>
      rt.startWakeDispatcher(storage.open(), {
        handlers,
        clock: clock.now,
        dispatcherId,
        intervalMs: null,
        pageSize: 4,
      }),
    )
    let errors = 0
    for (let round = 0; round < 2; round++) {
      const reports = await Promise.all(dispatchers.map((dispatcher) => dispatcher.tick()))
      errors += reports.reduce((sum, report) => sum + report.errors.length, 0)
    }
    await Promise.all(dispatchers.map((dispatcher) => dispatcher.stop()))
    let badRecords = 0
    for (const id of ids) {
      const record = await rt.getWake(registrar, id)
      const ok =
        record.state === 'fired' &&
        record.delivery?.attempts === 1 &&
        record.delivery.deliveredAt !== null &&
        ['dispatcher-a', 'dispatcher-b'].includes(record.firing?.dispatcher ?? '')
      if (!ok) badRecords++
    }
    return {
      registered: ids.length,
      handledTwice: [...calls].filter(([, count]) => count > 1),
      neverHandled: ids.filter((id) => !calls.has(id)).length,
      badRecords,
      indexLeft: (await indexKeys(registrar)).length,
      errors,
    }
  })
}

/** What the late-start scenario saw. */
export interface LateStartOutcome {
  /** The wakes the first tick handed to the handler, as `[id index, latenessMs]`, by index. */
  readonly firstTick: ReadonlyArray<readonly [number, number]>
  /** The order in which the first tick asked for the wakes' leases (claims), as id indexes. */
  readonly claimOrder: readonly number[]
  /**
   * Wakes whose firing decision was written while an earlier-due wake's claim
   * had not settled yet (the first wake's claim is held up 50 ms), as id
   * indexes: the ordering guarantee says none.
   */
  readonly firedBeforeEarlierClaimed: readonly number[]
  /** The recorded lateness of each past-due wake. */
  readonly recordedLateness: readonly number[]
  /** The not-yet-due wake's state after the first tick, and after the clock passed its due time. */
  readonly futureState: readonly [string, string]
  readonly indexLeft: number
}

/** One backend call the claim log saw: a lease asked for or settled, or a firing decision, by wake. */
type ClaimEvent = { kind: 'claim' | 'claimed' | 'fire'; id: string }

/**
 * A backend that logs, per wake record, each `acquireLease` asked for and
 * settled and each firing decision (a put of a record `fired` with one
 * attempt), holding the lease request of `slowId` up 50 ms of real time so
 * later wakes have every chance to fire before it is claimed.
 */
function claimLog(inner: Backend, slowId: () => string | undefined, log: ClaimEvent[]): Backend {
  const idOf = (key: unknown) =>
    typeof key === 'string' && key.startsWith('wakes/records/')
      ? key.slice('wakes/records/'.length)
      : undefined
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'acquireLease') {
        return async (...args: Parameters<Backend['acquireLease']>) => {
          const id = idOf(args[0])
          if (id === undefined) return target.acquireLease(...args)
          log.push({ kind: 'claim', id })
          try {
            if (id === slowId()) await sleep(50)
            return await target.acquireLease(...args)
          } finally {
            log.push({ kind: 'claimed', id })
          }
        }
      }
      if (property === 'put') {
        return async (...args: Parameters<Backend['put']>) => {
          const id = idOf(args[0])
          if (id !== undefined) {
            const record = JSON.parse(new TextDecoder().decode(args[1])) as {
              state: string
              delivery: { attempts: number; deliveredAt: number | null } | null
            }
            if (record.state === 'fired' && record.delivery?.deliveredAt === null) {
              log.push({ kind: 'fire', id })
            }
          }
          return target.put(...args)
        }
      }
      const value = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * Five wakes come due while no dispatcher runs (two buckets, 1 to 3 minutes
 * before it starts) and one is due 5 s after it starts. A dispatcher with a
 * page size of 2 and the default concurrency starts, the first wake's lease
 * request held up 50 ms: its first tick claims the five in due order, fires
 * none before every earlier-due one is claimed, fires all five, late, and not
 * the sixth; once the clock passes the sixth's due time, the next tick fires it.
 */
export async function lateStart(rt: Runtime, kind: WakeBackendKind): Promise<LateStartOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const dues = [T0 + 1_000, T0 + 2_000, T0 + 3_000, T0 + 61_000, T0 + 62_000]
    const ids: string[] = []
    const log: ClaimEvent[] = []
    const backend = claimLog(storage.open(), () => ids[0], log)
    for (const dueAt of dues) {
      ids.push(
        (
          await rt.registerWake(backend, {
            target: { kind: 'daemon', daemonId: 'd1' },
            cause: 'interval',
            dueAt,
            clock: clock.now,
          })
        ).id,
      )
    }
    const start = T0 + 180_500
    const future = await rt.registerWake(backend, {
      target: { kind: 'daemon', daemonId: 'd1' },
      cause: 'interval',
      dueAt: start + 5_000,
      clock: clock.now,
    })
    clock.set(start)
    const indexOf = (id: string) => (id === future.id ? 5 : ids.indexOf(id))
    const seen: Array<readonly [number, number]> = []
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        interval: async (wake) => {
          seen.push([indexOf(wake.id), wake.firing.latenessMs])
        },
      },
      clock: clock.now,
      intervalMs: null,
      pageSize: 2,
    })
    await dispatcher.tick()
    const firstTick = [...seen].sort((a, b) => a[0] - b[0])
    const firstLog = [...log]
    const futureBefore = (await rt.getWake(backend, future.id)).state
    clock.advance(5_000)
    await dispatcher.tick()
    await dispatcher.stop()
    const recordedLateness: number[] = []
    for (const id of ids)
      recordedLateness.push((await rt.getWake(backend, id)).firing?.latenessMs ?? -1)
    const settled = new Set<number>()
    const firedBeforeEarlierClaimed: number[] = []
    for (const event of firstLog) {
      const index = indexOf(event.id)
      if (event.kind === 'claimed') settled.add(index)
      if (event.kind === 'fire') {
        for (let earlier = 0; earlier < index; earlier++) {
          if (!settled.has(earlier)) {
            firedBeforeEarlierClaimed.push(index)
            break
          }
        }
      }
    }
    return {
      firstTick,
      claimOrder: firstLog.filter((event) => event.kind === 'claim').map((e) => indexOf(e.id)),
      firedBeforeEarlierClaimed,
      recordedLateness,
      futureState: [futureBefore, (await rt.getWake(backend, future.id)).state],
      indexLeft: (await indexKeys(backend)).length,
    }
  })
}

/** What the concurrency scenario saw. */
export interface ConcurrencyOutcome {
  /** The most handler calls in progress at once. */
  readonly peakInFlight: number
  /** Wakes the tick fired. */
  readonly fired: number
}

/**
 * Six due wakes, a dispatcher with `concurrency: 3` and a handler that waits
 * until the scenario lets it return. The scenario lets the tick run until the
 * number of calls in progress stayed the same for 100 ms (real time), then
 * releases them all: three calls at once, no more (the bound), no fewer (the
 * firing is concurrent).
 */
export async function boundedConcurrency(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<ConcurrencyOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    for (let i = 0; i < 6; i++) {
      await rt.registerWake(backend, {
        target: { kind: 'worker', workerId: `w${i}` },
        cause: 'timeout',
        dueAt: T0 + 1_000 + i,
        clock: clock.now,
      })
    }
    clock.set(T0 + 2_000)
    let inFlight = 0
    let peakInFlight = 0
    let release!: () => void
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        timeout: async () => {
          inFlight++
          peakInFlight = Math.max(peakInFlight, inFlight)
          await released
          inFlight--
        },
      },
      clock: clock.now,
      intervalMs: null,
      concurrency: 3,
    })
    const tick = dispatcher.tick()
    let last = -1
    let stableSince = Date.now()
    const deadline = Date.now() + 5_000
    while (Date.now() < deadline) {
      await sleep(10)
      if (inFlight !== last) {
        last = inFlight
        stableSince = Date.now()
      } else if (inFlight > 0 && Date.now() - stableSince >= 100) break
    }
    const peak = peakInFlight
    release()
    const report = await tick
    await dispatcher.stop()
    return {
      peakInFlight: peak,
      fired: report.outcomes.filter((entry) => entry.outcome === 'fired').length,
    }
  })
}

/** What the giving-up scenario saw. */
export interface GiveUpOutcome {
  /** Outcomes of the wake whose handler always fails non-retryably, tick by tick (after each lease TTL). */
  readonly failing: readonly (string | undefined)[]
  /** The record at the end: its state and failure. */
  readonly state: string
  readonly failure: unknown
  /** Outcomes of the wake whose handler always fails retryably (`CONCURRENT_RESUME`), tick by tick. */
  readonly retrying: readonly (string | undefined)[]
  readonly retryingState: string
  /** The markers left: the retrying wake's only. */
  readonly indexLeft: number
}

/**
 * Two daemon wakes, `maxAttempts: 3`: one handler always throws a
 * non-retryable error (`WAKE_CORRUPT`, a payload it cannot read), the other
 * a retryable one (`CONCURRENT_RESUME`). Five ticks, each after the lease
 * TTL: the first wake is given up on its third attempt (recorded `failed`
 * with the error, unindexed, never handed out again); the second is tried
 * on every tick and stays `fired`.
 */
export async function giveUpAfterAttempts(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<GiveUpOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const failingWake = await rt.registerWake(backend, {
      target: { kind: 'daemon', daemonId: 'd1' },
      cause: 'interval',
      dueAt: T0 + 1_000,
      clock: clock.now,
    })
    const retryingWake = await rt.registerWake(backend, {
      target: { kind: 'daemon', daemonId: 'd2' },
      cause: 'interval',
      dueAt: T0 + 1_001,
      clock: clock.now,
    })
    clock.set(T0 + 2_000)
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        interval: async (wake) => {
          if (wake.id === failingWake.id) {
            throw new AgentStateError('WAKE_CORRUPT', 'The payload fails its schema')
          }
          throw new AgentStateError('CONCURRENT_RESUME', 'Someone else holds it', {
            retryable: true,
          })
        },
      },
      clock: clock.now,
      leaseTtlMs: 1_000,
      intervalMs: null,
      maxAttempts: 3,
    })
    const failing: (string | undefined)[] = []
    const retrying: (string | undefined)[] = []
    for (let i = 0; i < 5; i++) {
      const report = await dispatcher.tick()
      failing.push(report.outcomes.find((entry) => entry.wakeId === failingWake.id)?.outcome)
      retrying.push(report.outcomes.find((entry) => entry.wakeId === retryingWake.id)?.outcome)
      clock.advance(1_001)
    }
    await dispatcher.stop()
    const record = await rt.getWake(backend, failingWake.id)
    return {
      failing,
      state: record.state,
      failure: record.failure,
      retrying,
      retryingState: (await rt.getWake(backend, retryingWake.id)).state,
      indexLeft: (await indexKeys(backend)).length,
    }
  })
}

/** The wake's state, or the code of the error reading it (a broken dispatcher may store a corrupt record). */
async function stateOf(rt: Runtime, backend: Backend, id: string): Promise<string> {
  try {
    return (await rt.getWake(backend, id)).state
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

/** What the cancel scenario saw. */
export interface CancelOutcome {
  readonly cancelResult: string
  /** Ids (by index: 0 cancelled, 1 cancelled with its marker put back, 2 not cancelled) handed to the handler. */
  readonly handled: readonly number[]
  readonly states: readonly string[]
  /** `cancelWake` of the fired wake: the state it returns. */
  readonly cancelAfterFire: string
  readonly indexLeft: number
}

/**
 * Three due wakes: the first is cancelled; the second is cancelled and its
 * marker written back (a cancel killed before it deleted the marker); the
 * third is not. A tick hands out only the third; cancelling it afterwards
 * returns it `fired`.
 */
export async function cancelledNeverFires(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<CancelOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      ids.push(
        (
          await rt.registerWake(backend, {
            target: { kind: 'worker', workerId: `w${i}` },
            cause: 'event',
            dueAt: T0 + 1_000 + i,
            clock: clock.now,
          })
        ).id,
      )
    }
    const [first, second, third] = ids as [string, string, string]
    const cancelled = await rt.cancelWake(backend, first, {
      reason: 'worker resumed by hand',
      clock: clock.now,
    })
    await rt.cancelWake(backend, second, { clock: clock.now })
    await backend.put(`wakes/due/${String(T0).padStart(13, '0')}/${second}`, new Uint8Array(0))
    clock.set(T0 + 10_000)
    const handled: number[] = []
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: { event: async (wake) => void handled.push(ids.indexOf(wake.id)) },
      clock: clock.now,
      intervalMs: null,
    })
    await dispatcher.tick()
    await dispatcher.stop()
    const states: string[] = []
    for (const id of ids) states.push(await stateOf(rt, backend, id))
    return {
      cancelResult: cancelled.state,
      handled,
      states,
      cancelAfterFire: (await rt.cancelWake(backend, third, { clock: clock.now })).state,
      indexLeft: (await indexKeys(backend)).length,
    }
  })
}

/** What the frozen-dispatcher scenario saw. */
export interface FrozenOutcome {
  /** The frozen dispatcher's outcome for the wake once it resumed. */
  readonly frozenOutcome: string | undefined
  /** Which dispatchers' handler calls ran, in order. */
  readonly handledBy: readonly string[]
  /** The recorded firing: its dispatcher, and whether its token is the taker's. */
  readonly firedBy: string | undefined
  readonly tokenIsTakers: boolean
}

/** A backend whose `put` of `key` waits for `gate` (once), telling `reached` when it does: a process frozen there. */
function freezingPut(
  inner: Backend,
  key: string,
  reached: () => void,
  gate: Promise<void>,
): Backend {
  let frozen = false
  return new Proxy(inner, {
    get(target, property, receiver) {
      if (property === 'put') {
        return async (...args: Parameters<Backend['put']>) => {
          if (!frozen && args[0] === key) {
            frozen = true
            reached()
            await gate
          }
          return target.put(...args)
        }
      }
      const value = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * Dispatcher A takes a due wake's lease and reads it, then freezes just
 * before its firing write (SIGSTOP, a GC pause). The clock passes A's lease
 * TTL; dispatcher B takes the wake, fires and delivers it. A then resumes
 * and makes its write.
 */
export async function frozenMidFire(rt: Runtime, kind: WakeBackendKind): Promise<FrozenOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const registrar = storage.open()
    const wake = await rt.registerWake(registrar, {
      target: { kind: 'worker', workerId: 'w1' },
      cause: 'timeout',
      dueAt: T0 + 1_000,
      clock: clock.now,
    })
    clock.set(T0 + 2_000)
    let reached!: () => void
    const atFreeze = new Promise<void>((resolve) => {
      reached = resolve
    })
    let thaw!: () => void
    const gate = new Promise<void>((resolve) => {
      thaw = resolve
    })
    const handledBy: string[] = []
    const handlerOf = (name: string) => ({
      timeout: async () => void handledBy.push(name),
    })
    const frozen = rt.startWakeDispatcher(
      freezingPut(storage.open(), `wakes/records/${wake.id}`, reached, gate),
      {
        handlers: handlerOf('a'),
        clock: clock.now,
        dispatcherId: 'dispatcher-a',
        leaseTtlMs: 1_000,
        intervalMs: null,
      },
    )
    const frozenTick = frozen.tick()
    await atFreeze
    clock.advance(1_001)
    const taker = rt.startWakeDispatcher(storage.open(), {
      handlers: handlerOf('b'),
      clock: clock.now,
      dispatcherId: 'dispatcher-b',
      leaseTtlMs: 1_000,
      intervalMs: null,
    })
    await taker.tick()
    const takerRecord = await rt.getWake(registrar, wake.id)
    thaw()
    const report = await frozenTick
    await Promise.all([frozen.stop(), taker.stop()])
    const record = await rt.getWake(registrar, wake.id)
    return {
      frozenOutcome: report.outcomes.find((outcome) => outcome.wakeId === wake.id)?.outcome,
      handledBy,
      firedBy: record.firing?.dispatcher,
      tokenIsTakers: record.firing !== null && record.firing.token === takerRecord.firing?.token,
    }
  })
}

/** What the handler-failure scenario saw. */
export interface RedeliveryOutcome {
  /** The outcomes of the three ticks: the failing call, within the lease, after it expired. */
  readonly outcomes: readonly (string | undefined)[]
  readonly calls: number
  /** The record at the end: attempts, whether delivered, and whether the firing is still the first one. */
  readonly attempts: number | undefined
  readonly delivered: boolean
  readonly firingKept: boolean
  readonly indexLeft: number
}

/**
 * A handler rejects the first call. The wake stays fired and undelivered,
 * held by the failed dispatcher's lease: the next tick within the TTL leaves
 * it (`busy`), and once the TTL passed it is delivered again, the firing
 * unchanged.
 */
export async function handlerFailure(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<RedeliveryOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const wake = await rt.registerWake(backend, {
      target: { kind: 'worker', workerId: 'w1' },
      cause: 'schedule',
      dueAt: T0 + 1_000,
      clock: clock.now,
    })
    clock.set(T0 + 2_000)
    let calls = 0
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        schedule: async () => {
          calls++
          if (calls === 1) throw new Error('the target is down')
        },
      },
      clock: clock.now,
      leaseTtlMs: 1_000,
      intervalMs: null,
    })
    const outcomes: (string | undefined)[] = []
    const tick = async () => {
      const report = await dispatcher.tick()
      outcomes.push(report.outcomes.find((entry) => entry.wakeId === wake.id)?.outcome)
    }
    await tick()
    const fired = await rt.getWake(backend, wake.id)
    clock.advance(500)
    await tick()
    clock.advance(501)
    await tick()
    await dispatcher.stop()
    const record = await rt.getWake(backend, wake.id)
    return {
      outcomes,
      calls,
      attempts: record.delivery?.attempts,
      delivered: record.delivery?.deliveredAt != null,
      firingKept: JSON.stringify(record.firing) === JSON.stringify(fired.firing),
      indexLeft: (await indexKeys(backend)).length,
    }
  })
}

/** What the interrupted-registration scenario saw (wakes named `a` and `b`). */
export interface InterruptedOutcome {
  /** `b`'s `registerWake`, overtaken by a sweep between its two writes: the state it returned, or the code it threw. */
  readonly raced: string
  /** What that sweep completed. */
  readonly racedSweep: readonly string[]
  /** Wakes fired by the tick before the sweep, by the sweep's completion, and by the tick after it. */
  readonly firstTick: readonly string[]
  readonly sweep: readonly string[]
  readonly secondTick: readonly string[]
  readonly states: readonly string[]
  readonly indexLeft: number
}

/**
 * Two interrupted registrations. `b`'s registrant is slow: a sweep runs
 * between its record write and its marker write, and completes it; the
 * registrant's own marker write then finds the marker and returns the wake.
 * `a`'s registrant died between the two writes (its marker deleted after a
 * normal registration: the state the crash leaves). A tick fires `b` only;
 * a sweep completes `a`; the next tick fires it, late.
 */
export async function interruptedRegistration(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<InterruptedOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const names = new Map<string, string>()
    const nameOf = (id: string) => names.get(id) ?? id
    let racedSweep: string[] = []
    const slow = new Proxy(backend, {
      get(target, property, receiver) {
        if (property === 'put') {
          return async (...args: Parameters<Backend['put']>) => {
            if (args[0].startsWith('wakes/due/')) {
              const swept = await rt.sweepWakeRegistrations(target)
              racedSweep = swept.completed.map((id) => (names.has(id) ? nameOf(id) : 'b'))
            }
            return target.put(...args)
          }
        }
        const value = Reflect.get(target, property, receiver)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    let raced: string
    try {
      const b = await rt.registerWake(slow, {
        target: { kind: 'worker', workerId: 'wb' },
        cause: 'timeout',
        dueAt: T0 + 1_000,
        clock: clock.now,
      })
      names.set(b.id, 'b')
      raced = b.state
    } catch (error) {
      raced = (error as { code?: string }).code ?? String(error)
    }
    const a = await rt.registerWake(backend, {
      target: { kind: 'worker', workerId: 'wa' },
      cause: 'timeout',
      dueAt: T0 + 1_001,
      clock: clock.now,
    })
    names.set(a.id, 'a')
    await backend.delete(`wakes/due/${String(T0).padStart(13, '0')}/${a.id}`)
    clock.set(T0 + 2_000)
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: { timeout: async () => undefined },
      clock: clock.now,
      intervalMs: null,
    })
    const firedIn = (report: Awaited<ReturnType<typeof dispatcher.tick>>) =>
      report.outcomes.filter((o) => o.outcome === 'fired').map((o) => nameOf(o.wakeId))
    const firstTick = firedIn(await dispatcher.tick())
    const sweep = (await rt.sweepWakeRegistrations(backend)).completed.map(nameOf)
    const secondTick = firedIn(await dispatcher.tick())
    await dispatcher.stop()
    const states: string[] = []
    for (const id of [...names.keys()].sort((x, y) => nameOf(x).localeCompare(nameOf(y)))) {
      states.push(await stateOf(rt, backend, id))
    }
    return {
      raced,
      racedSweep,
      firstTick,
      sweep,
      secondTick,
      states,
      indexLeft: (await indexKeys(backend)).length,
    }
  })
}

/** Waits (real time, at most `ms`) until `check` holds; resolves whether it did. */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() >= deadline) return false
    await sleep(10)
  }
  return true
}

/** What the notified-ticks scenario saw. */
export interface NotifiedOutcome {
  /** Whether the dispatcher said its ticks are woken by change notification. */
  readonly notified: boolean
  /** Whether the gate wake (due at registration) reached its handler long before the one-hour interval. */
  readonly gateHandled: boolean
  /** Of the burst's 20 wakes, registered while the gate's tick runs, how many were handled. */
  readonly burstHandled: number
  /** Ticks run once the burst is handled and every hint has had time to arrive: the gate's and one coalesced. */
  readonly ticksAfterBurst: number
  /** Whether a wake due twice `maxDelayMs` (at least 200 ms) after its registration, before the next interval tick, was handled. */
  readonly soonHandled: boolean
  /** Ticks once it was: one more. */
  readonly ticksAfterSoon: number
  /** With `tickOnChange: false`, and on a backend that claims no change notification: notified, and whether a wake due now was handled before the interval. */
  readonly off: { readonly notified: boolean; readonly handled: boolean }
  readonly unclaimed: { readonly notified: boolean; readonly handled: boolean }
}

/**
 * Ticks woken by change notification. The dispatcher's interval is one hour,
 * so every wake handled here was handled by a tick a hint started. Its clock
 * runs from T0 with real time (the lease clock stays the manual one, at T0,
 * so no lease expires). A registrant (a second backend instance, as another
 * process) registers a gate wake due now, whose handler holds the tick until
 * the scenario opens it; while it is held, 20 wakes due now; the scenario
 * waits twice the backend's `maxDelayMs` (the hints have arrived), opens the
 * gate, waits until the 20 are handled and twice `maxDelayMs` more (the
 * hints of the dispatcher's own marker deletes have arrived too), and counts
 * the ticks: two (the gate's; one for the whole burst), none for its own
 * deletes. Then a wake due twice `maxDelayMs` after registration (at least
 * 200 ms): its hint arms the timer
 * at its due time, one more tick. Last, a dispatcher with `tickOnChange:
 * false` and one over a backend that hides its claim: neither is notified,
 * and a wake due now waits for the interval.
 */
export async function notifiedTicks(rt: Runtime, kind: WakeBackendKind): Promise<NotifiedOutcome> {
  return withStorage(kind, async (storage) => {
    const backend = storage.open()
    const registrant = storage.open()
    const hintMs = 2 * (backend.capabilities.changeNotification?.maxDelayMs ?? 500)
    // How long a wake may take to be handled: a notified tick comes well within it (memory 1.5 s, fs 4 s).
    const boundMs = Math.max(1_500, 4 * hintMs)
    const start = performance.now()
    const clock = () => T0 + Math.floor(performance.now() - start)
    const register = (workerId: string, dueAt: number, on: Backend = registrant) =>
      rt.registerWake(on, { target: { kind: 'worker', workerId }, cause: 'timeout', dueAt, clock })
    const handled = new Set<string>()
    let open!: () => void
    const gateOpen = new Promise<void>((resolve) => {
      open = resolve
    })
    let gateId = ''
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        timeout: async (wake) => {
          handled.add(wake.id)
          if (wake.id === gateId) await gateOpen
        },
      },
      clock,
      intervalMs: 3_600_000,
    })
    await dispatcher.ready
    const notified = dispatcher.notified
    gateId = (await register('gate', clock())).id
    const gateHandled = await until(() => handled.has(gateId), boundMs)
    if (!gateHandled) {
      // Nothing is woken by a change: the rest would only wait out its bounds.
      open()
      await dispatcher.stop()
      const none = { notified: false, handled: false }
      return {
        notified,
        gateHandled,
        burstHandled: 0,
        ticksAfterBurst: dispatcher.ticks,
        soonHandled: false,
        ticksAfterSoon: dispatcher.ticks,
        off: none,
        unclaimed: none,
      }
    }
    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) => register(`burst${i}`, clock())),
    )
    await sleep(hintMs)
    open()
    await until(() => burst.every((wake) => handled.has(wake.id)), boundMs)
    await sleep(hintMs)
    const burstHandled = burst.filter((wake) => handled.has(wake.id)).length
    const ticksAfterBurst = dispatcher.ticks
    // Due once its hint has surely arrived, so the hint arms the timer rather than ticking now.
    const soon = await register('soon', clock() + Math.max(200, hintMs))
    const soonHandled = await until(() => handled.has(soon.id), boundMs)
    await sleep(hintMs)
    const ticksAfterSoon = dispatcher.ticks
    await dispatcher.stop()

    const untouched = async (on: Backend, options: { tickOnChange?: boolean }) => {
      let called = false
      const quiet = rt.startWakeDispatcher(on, {
        handlers: {
          timeout: async () => {
            called = true
          },
        },
        clock,
        intervalMs: 3_600_000,
        ...options,
      })
      await quiet.ready
      await register('quiet', clock(), on)
      await sleep(hintMs / 2)
      const outcome = { notified: quiet.notified, handled: called }
      await quiet.stop()
      return outcome
    }
    const off = await untouched(storage.open(), { tickOnChange: false })
    const hidden = storage.open()
    const unclaimedBackend = new Proxy(hidden, {
      get(target, property, receiver) {
        if (property === 'capabilities') {
          const { changeNotification: _, ...rest } = target.capabilities
          return rest
        }
        const value = Reflect.get(target, property, receiver)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const unclaimed = await untouched(unclaimedBackend, {})
    return {
      notified,
      gateHandled,
      burstHandled,
      ticksAfterBurst,
      soonHandled,
      ticksAfterSoon,
      off,
      unclaimed,
    }
  })
}

/** What the dispatcher-sweep scenario saw. */
export interface DispatcherSweepOutcome {
  /** With `sweep: { periodMs: 100, limit: 1 }`: whether two rounds ran (one record each), and the tick after them. */
  readonly on: { readonly swept: boolean; readonly tick: readonly string[] }
  /** With `sweep: null`: rounds run in the same wait (none), and the tick after it. */
  readonly off: { readonly rounds: number; readonly tick: readonly string[] }
}

/**
 * A registration interrupted between its two writes (the marker deleted
 * after `registerWake`: the state a crash leaves) is completed by the
 * dispatcher's own sweep. Two such wakes; with `sweep: { periodMs: 100,
 * limit: 1 }` the first round completes the first record's, the second
 * round goes on from its cursor and completes the other's, and the next
 * tick fires both; with `sweep: null`,
 * after as long (300 ms of real time), nothing is swept and nothing fires.
 * Change-notified ticks are off and the interval is an hour, so only the
 * explicit ticks fire.
 */
export async function dispatcherSweep(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<DispatcherSweepOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const interrupted = async (workerId: string) => {
      const wake = await rt.registerWake(backend, {
        target: { kind: 'worker', workerId },
        cause: 'timeout',
        dueAt: T0 + 1_000,
        clock: clock.now,
      })
      await backend.delete(`wakes/due/${String(T0).padStart(13, '0')}/${wake.id}`)
      return wake.id
    }
    const names = new Map([
      [await interrupted('on'), 'on'],
      [await interrupted('off'), 'off'],
    ])
    clock.set(T0 + 2_000)
    const fired: string[] = []
    const start = (sweep: { periodMs: number; limit: number } | null) =>
      rt.startWakeDispatcher(backend, {
        handlers: {
          timeout: async (wake) => {
            fired.push(names.get(wake.id) ?? wake.id)
          },
        },
        clock: clock.now,
        intervalMs: 3_600_000,
        tickOnChange: false,
        sweep,
      })
    const firedBy = async (dispatcher: ReturnType<typeof start>) => {
      fired.length = 0
      await dispatcher.tick()
      return [...fired]
    }

    const off = start(null)
    await sleep(300)
    const offOutcome = { rounds: off.sweeps.rounds, tick: await firedBy(off) }
    await off.stop()

    const on = start({ periodMs: 100, limit: 1 })
    // Two rounds of a 100 ms period come well within 1.5 s.
    const swept = await until(() => on.sweeps.rounds >= 2, 1_500)
    const onOutcome = { swept, tick: (await firedBy(on)).sort() }
    await on.stop()
    return { on: onOutcome, off: offOutcome }
  })
}

/** Backend calls and ticks of one dispatcher over a stretch of (fake) time. */
export interface IdleCount {
  /** Backend operations (every method call but `watch`, `close` and the capability read). */
  readonly calls: number
  readonly ticks: number
}

/** What the idle-sleep scenario saw. */
export interface IdleSleepOutcome {
  readonly notified: boolean
  /** One idle minute of a notified dispatcher (interval 1 s, the default 60 s ceiling, one wake pending an hour ahead). */
  readonly notifiedMinute: IdleCount
  /** The same minute with `tickOnChange: false`: the pace of every dispatcher before it slept. */
  readonly intervalMinute: IdleCount
  /** How long after its due time (ms of the clock) a wake registered 5 s ahead while the dispatcher slept was handled, or `null` if not within 10 s. */
  readonly sleeperLateByMs: number | null
}

/** A backend that counts its operations and how many are in flight. */
function counted(inner: Backend): {
  backend: Backend
  calls: () => number
  inFlight: () => number
} {
  let calls = 0
  let inFlight = 0
  const uncounted = new Set<PropertyKey>(['watch', 'close'])
  const backend = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      if (uncounted.has(property)) return value.bind(target)
      return (...args: unknown[]) => {
        calls++
        inFlight++
        const settle = () => {
          inFlight--
        }
        try {
          const result = value.apply(target, args)
          if (result instanceof Promise) return result.finally(settle)
          settle()
          return result
        } catch (error) {
          settle()
          throw error
        }
      }
    },
  })
  return { backend, calls: () => calls, inFlight: () => inFlight }
}

/**
 * An idle notified dispatcher sleeps until its next known wake, a hint or
 * its ceiling, instead of ticking every interval. Timers are vitest's fake
 * ones (setTimeout and `performance.now()`) moved with the manual clock in 250 ms steps, so a
 * minute costs no real minute; after each step the scenario waits (real
 * time, setImmediate) until no backend call is in flight, so the
 * filesystem's real I/O finishes within its step. One wake pending an hour
 * ahead; a minute of a notified dispatcher and one of a dispatcher with
 * `tickOnChange: false` are counted (backend calls, ticks). Then, 2 s later
 * (past the notified one's tick at its ceiling, so it sleeps another
 * minute), another instance registers a wake due 5 s later (past
 * the 1 s interval, so only its hint can wake the sleeper in time): the
 * scenario waits for the hint in real time, then steps the clock and notes
 * when the wake is handled.
 */
export async function idleSleep(rt: Runtime, kind: WakeBackendKind): Promise<IdleSleepOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const registrant = storage.open()
    const register = (workerId: string, dueAt: number) =>
      rt.registerWake(registrant, {
        target: { kind: 'worker', workerId },
        cause: 'timeout',
        dueAt,
        clock: clock.now,
      })
    await register('far', T0 + 3_600_000)
    const hintMs = 2 * (registrant.capabilities.changeNotification?.maxDelayMs ?? 500)
    const handled = new Map<string, number>()
    const settle = async (count: { inFlight: () => number }) => {
      // Two quiet turns in a row: a call just settled may start the next one in a microtask.
      for (let quiet = 0; quiet < 2; ) {
        await new Promise((resolve) => setImmediate(resolve))
        quiet = count.inFlight() === 0 ? quiet + 1 : 0
      }
    }
    const step = async (count: { inFlight: () => number }, ms: number) => {
      clock.advance(ms)
      await vi.advanceTimersByTimeAsync(ms)
      await settle(count)
    }
    const minute = async (tickOnChange: boolean) => {
      const count = counted(storage.open())
      const dispatcher = rt.startWakeDispatcher(count.backend, {
        handlers: {
          timeout: async (wake) => {
            handled.set(wake.id, clock.now())
          },
        },
        clock: clock.now,
        intervalMs: 1_000,
        tickOnChange,
        sweep: null,
      })
      await dispatcher.ready
      const before = { calls: count.calls(), ticks: dispatcher.ticks }
      for (let i = 0; i < 240; i++) await step(count, 250)
      const spent = { calls: count.calls() - before.calls, ticks: dispatcher.ticks - before.ticks }
      return { dispatcher, count, spent }
    }
    // `performance` too: the dispatcher's timer never runs before its deadline on `performance.now()` (deadline-timer.ts).
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    try {
      const interval = await minute(false)
      await interval.dispatcher.stop()
      const notifiedRun = await minute(true)
      const { dispatcher, count } = notifiedRun
      // Past the tick at the ceiling (61 s): the next one is a minute away, so only a hint is in time.
      for (let i = 0; i < 8; i++) await step(count, 250)
      const sleeper = await register('sleeper', clock.now() + 5_000)
      // Real time (the global setTimeout is fake here): the hint crosses inotify or the memory store.
      await realSleep(hintMs)
      let sleeperLateByMs: number | null = null
      for (let i = 0; i < 40 && sleeperLateByMs === null; i++) {
        await step(count, 250)
        const at = handled.get(sleeper.id)
        if (at !== undefined) sleeperLateByMs = at - sleeper.dueAt
      }
      const notified = dispatcher.notified
      await dispatcher.stop()
      return {
        notified,
        notifiedMinute: notifiedRun.spent,
        intervalMinute: interval.spent,
        sleeperLateByMs,
      }
    } finally {
      vi.useRealTimers()
    }
  })
}
