import { randomBytes } from 'node:crypto'
import {
  type Backend,
  type Clock,
  isAgentStateError,
  type Lease,
  systemClock,
} from '@agent-state/core'
import { z } from 'zod'
import { wakeError } from '../shared/errors.js'
import { auditWakeFailure } from '../worker/worker-lifecycle.js'
import { type ClaimTurn, inDueOrder } from './claim-order.js'
import { handleDaemonWake } from './daemon-wakes.js'
import { type SweepRound, startRegistrationSweeper } from './registration-sweeper.js'
import { type SameTargetGate, sameTargetGate } from './same-target.js'
import { MAX_MET_WAKES, startTickTimer } from './tick-timer.js'
import { givesUp, nextStep, takeWake, writeUnderLease } from './wake-firing.js'
import {
  type DueHorizon,
  type DueMarker,
  dueBuckets,
  dueMarkers,
  notePending,
} from './wake-index.js'
import {
  decodeWake,
  type FiredWake,
  recordKeyOfId,
  WAKE_CAUSES,
  type WakeCause,
  type WakeRecord,
} from './wake-records.js'
import { unindexWake } from './wake-registry.js'
import { startWebhookEndpoint, webhookEndpointOptionsSchema } from './webhook-endpoint.js'
import { handleWorkerWake, workerWakeOptionsSchema } from './worker-wake-handler.js'

export type { SweepRound } from './registration-sweeper.js'
export type { FiredWake } from './wake-records.js'

/** What a dispatcher calls for a fired wake of one cause. A rejection leaves the wake to be delivered again. */
export type WakeHandler = (wake: FiredWake) => Promise<void>

/** The dispatcher's data options; the single source of their types. */
export const wakeDispatcherOptionsSchema = z.strictObject({
  /** One handler per cause this dispatcher fires; wakes of other causes stay pending for another dispatcher. */
  handlers: z.partialRecord(
    z.enum(WAKE_CAUSES),
    z.custom<WakeHandler>((value) => typeof value === 'function', 'a handler must be a function'),
  ),
  /**
   * The built-in handler of workers' `timeout`, `event`, `schedule` and `webhook` wakes (resume
   * conditions, docs/runtime/wakes.md): resumes the worker and passes it to
   * `onResumed`, or fails it. Used for a worker's wake whose cause has no
   * entry in `handlers`. Without it, worker wakes are left to a dispatcher
   * that has it.
   */
  workers: workerWakeOptionsSchema.optional(),
  /**
   * The built-in handler of daemons' `interval` and `event` (path) wakes
   * (`handleDaemonWake`, docs/runtime/wakes.md, Daemon wakes): enqueues each
   * into the daemon's queue with its wake id. Used for a daemon's wake whose
   * cause has no entry in `handlers`. Default `false`: daemon wakes are left
   * to a dispatcher that has it.
   */
  daemons: z.boolean().default(false),
  /**
   * Serve a webhook endpoint (docs/runtime/wakes.md, Webhooks): `{ host?,
   * port?, maxBodyBytes? }`, default 127.0.0.1, a free port, 64 KiB. A call
   * of a `webhook` trigger is recorded as a wake before it is answered, so
   * any dispatcher over the backend fires it. Off unless given: a library
   * does not open a listening socket nobody asked for.
   */
  webhook: webhookEndpointOptionsSchema.optional(),
  /** The clock due times are compared with (and `firedAt` read from). Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .default(() => systemClock),
  /** This dispatcher's name in leases and firing records. Default `wake-dispatcher-<random>`. */
  dispatcherId: z
    .string()
    .min(1)
    .max(200)
    .default(() => `wake-dispatcher-${randomBytes(6).toString('hex')}`),
  /** Time-to-live of a firing lease: how long a dispatcher that dies mid-fire holds the wake up. Default 30 s. */
  leaseTtlMs: z.int().min(100).max(3_600_000).default(30_000),
  /** Ms between ticks, or `null` for ticks only on `tick()`. Default 1000. */
  intervalMs: z.int().min(10).max(3_600_000).nullable().default(1_000),
  /**
   * Where ticks are woken by change notification (`notified`), the longest
   * the dispatcher sleeps between ticks when no wake is due sooner: an idle
   * notified dispatcher ticks when the earliest pending wake comes due, on a
   * hint, or after this ceiling, whichever comes first, never more often
   * than every `intervalMs` (docs/runtime/wakes.md, Ticks woken by change
   * notification). The ceiling bounds how late a wake whose hint was lost
   * fires. Ignored when not notified. Default 60 s.
   */
  idleCeilingMs: z.int().min(10).max(86_400_000).default(60_000),
  /**
   * Where the backend claims change notification, watch the due-time index
   * and tick as soon as a wake is registered that is due (or due before the
   * next tick), coalesced (docs/runtime/wakes.md, Ticks woken by change
   * notification). Ignored with `intervalMs: null`. Default `true`.
   */
  tickOnChange: z.boolean().default(true),
  /**
   * The slow sweep of interrupted registrations (`sweepWakeRegistrations`,
   * docs/runtime/wakes.md, Cancel and registration): one page of `limit`
   * records every `periodMs`, going on from the previous page, so a wake
   * whose registrant died between its two writes is completed and fires
   * without an operator. On by default (10 minutes, 1000 records): such a
   * wake is otherwise lost silently (a parked worker never woken), and a
   * round costs one listing and at most `limit` reads. `null` turns it off
   * (a deployment that runs the sweep elsewhere). Ignored with `intervalMs:
   * null`, like every timer of the dispatcher.
   */
  sweep: z
    .strictObject({
      periodMs: z.int().min(100).max(86_400_000).default(600_000),
      limit: z.int().min(1).max(10_000).default(1_000),
    })
    .nullable()
    .default({ periodMs: 600_000, limit: 1_000 }),
  /** Page size of the index listings. Default 100. */
  pageSize: z.int().min(1).max(1000).default(100),
  /**
   * How many wakes one tick works on at once (claim, firing, handler,
   * delivery). Claims start in due order and a wake's firing decision waits
   * until every earlier-due wake of the tick is claimed (docs/runtime/wakes.md,
   * A tick). Default 8; 1 fires one wake at a time.
   */
  concurrency: z.int().min(1).max(256).default(8),
  /**
   * Handler calls after which a wake whose handler fails with a non-retryable
   * error is given up: recorded `failed` with the error, audited on its
   * worker (`wake_failed`), removed from the index. Retryable failures
   * (`AgentStateError.retryable`, for example `CONCURRENT_RESUME`) never end
   * it. Default 5.
   */
  maxAttempts: z.int().min(1).max(1000).default(5),
})
/** What `startWakeDispatcher` accepts. */
export type WakeDispatcherOptions = z.input<typeof wakeDispatcherOptionsSchema>

/** What one wake came to in a tick. */
export type WakeOutcome =
  /** Fired by this dispatcher (the decision is its) and delivered. */
  | 'fired'
  /** Fired earlier (by any dispatcher), delivered again by this one. */
  | 'redelivered'
  /** Finished earlier (cancelled, or delivered): only its marker removed from the index. */
  | 'archived'
  /** Another dispatcher (or a cancel) held the wake's lease. */
  | 'busy'
  /** No handler for its cause here. */
  | 'unhandled'
  /** The handler rejected; the wake is delivered again once the lease expires. */
  | 'handler-failed'
  /** The fenced write was refused: the lease was lost or the record changed since it was read. */
  | 'lost'
  /** The handler failed non-retryably on attempt `maxAttempts` or later: the wake is recorded `failed` and never handed out again. */
  | 'failed'

/** What a tick did, wake by wake. */
export interface TickReport {
  readonly now: number
  readonly outcomes: ReadonlyArray<{ readonly wakeId: string; readonly outcome: WakeOutcome }>
  /** Errors that stopped a wake's processing (corrupt records, backend failures), by wake key. */
  readonly errors: ReadonlyArray<{ readonly key: string; readonly error: unknown }>
  /**
   * The earliest due time of a wake the tick leaves pending, as far as its
   * listing saw: `now` when a due wake was left (busy, unhandled, failed or
   * in error), else the first wake not yet due (or the start of its bucket),
   * `null` when the index holds nothing more.
   */
  readonly nextDueAt: number | null
}

/** A running dispatcher. */
export interface WakeDispatcher {
  readonly dispatcherId: string
  /** Whether change notification of the due-time index wakes its ticks (`tickOnChange` on a backend that claims it, and the watch has not ended). */
  readonly notified: boolean
  /**
   * Resolves once the due-time index is watched (at once when not notified):
   * wakes registered from then on start a tick; and once the webhook
   * endpoint listens (rejects when its address cannot be bound).
   */
  readonly ready: Promise<void>
  /** The webhook endpoint's `http://<host>:<port>` once it listens; `null` without the `webhook` option. */
  readonly webhookEndpoint: string | null
  /** Ticks run so far (by the timer, by a change, by `tick()`): a diagnostic, and how tests count them. */
  readonly ticks: number
  /** Registration sweep rounds run so far (the `sweep` option), and the last one's result or error. */
  readonly sweeps: { readonly rounds: number; readonly last: SweepRound | null }
  /** Runs one tick now (after the one in progress, if any): fires every due wake it can. */
  tick(): Promise<TickReport>
  /** Stops the timer and waits for the tick in progress. Idempotent. */
  stop(): Promise<void>
}

type Parsed = z.output<typeof wakeDispatcherOptionsSchema>

/**
 * Starts a dispatcher over `backend` (docs/runtime/wakes.md). Each tick lists
 * only the due-time buckets up to now (a delimiter listing that stops at the
 * first future bucket), then each such bucket's wakes up to now, so its cost
 * grows with the due wakes, not the registered ones. A due wake is fired by
 * a fenced compare-and-set from `pending` to `fired` under the wake's lease,
 * then handed to the cause's handler (at-least-once), then marked delivered
 * and removed from the index (the record stays).
 *
 * @throws `INVALID_DISPATCHER_OPTIONS`.
 */
export function startWakeDispatcher(
  backend: Backend,
  options: WakeDispatcherOptions,
): WakeDispatcher {
  const parsed = wakeDispatcherOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw wakeError(
      'INVALID_DISPATCHER_OPTIONS',
      `Invalid dispatcher options at ${path}`,
      { path },
      parsed.error,
    )
  }
  const config = parsed.data
  let chain: Promise<unknown> = Promise.resolve()
  let ticks = 0
  // Wakes met by ticks, in insertion order, so the oldest are dropped first.
  const met = new Set<string>()
  const noteMet = (wakeId: string): void => {
    met.delete(wakeId)
    met.add(wakeId)
    if (met.size > MAX_MET_WAKES) met.delete(met.values().next().value as string)
  }

  const tick = (): Promise<TickReport> => {
    const run = chain.then(async () => {
      ticks++
      try {
        return await runTick(backend, config, noteMet, () => timer?.busy())
      } finally {
        timer?.settled()
      }
    })
    chain = run.catch(() => undefined)
    return run
  }
  const timer =
    config.intervalMs === null
      ? null
      : startTickTimer(backend, {
          intervalMs: config.intervalMs,
          idleCeilingMs: config.idleCeilingMs,
          tickOnChange: config.tickOnChange,
          clock: config.clock,
          met,
          tick,
        })
  const sweeper =
    config.intervalMs === null ? null : startRegistrationSweeper(backend, config.sweep)
  const endpoint =
    config.webhook === undefined
      ? null
      : startWebhookEndpoint(backend, config.webhook, config.clock)
  const ready = Promise.all([timer?.ready, endpoint?.ready]).then(() => undefined)
  // A caller that never awaits `ready` must not get an unhandled rejection; `ready` still rejects.
  ready.catch(() => undefined)
  return {
    dispatcherId: config.dispatcherId,
    get sweeps() {
      return { rounds: sweeper?.rounds ?? 0, last: sweeper?.last ?? null }
    },
    get notified() {
      return timer?.notified ?? false
    },
    ready,
    get webhookEndpoint() {
      return endpoint?.url ?? null
    },
    get ticks() {
      return ticks
    },
    tick,
    async stop() {
      timer?.stop()
      await Promise.all([chain, sweeper?.stop(), endpoint?.close()])
    },
  }
}

/**
 * One tick: the due buckets in time order, each drained up to `now`, up to
 * `concurrency` wakes at once. Claims (lease acquisitions) start in due
 * order; each wake's firing decision waits for every earlier-due wake's claim
 * to settle (taken, busy or failed), so no wake is fired while an earlier-due
 * one met by the tick is still unclaimed. Outcomes are reported in due order.
 */
async function runTick(
  backend: Backend,
  config: Parsed,
  noteMet: (wakeId: string) => void,
  busy: () => void,
): Promise<TickReport> {
  const now = config.clock()
  const slots: Array<
    { wakeId: string; outcome: WakeOutcome } | { key: string; error: unknown } | undefined
  > = []
  const horizon: DueHorizon = { nextDueAt: null }
  const gate = sameTargetGate()
  async function* markers(): AsyncGenerator<{ marker: DueMarker; slot: number }> {
    for await (const bucket of dueBuckets(backend, now, horizon)) {
      for await (const marker of dueMarkers(backend, bucket, now, config.pageSize, horizon)) {
        // Before any work on it, so the hint of its marker delete is known as this tick's own.
        if ('wakeId' in marker) noteMet(marker.wakeId)
        slots.push(undefined)
        yield { marker, slot: slots.length - 1 }
      }
    }
  }
  await inDueOrder(markers(), config.concurrency, async ({ marker, slot }, turn) => {
    if ('error' in marker) {
      slots[slot] = marker
      return
    }
    try {
      slots[slot] = {
        wakeId: marker.wakeId,
        outcome: await processWake(backend, config, marker.wakeId, now, turn, { gate, slot }, busy),
      }
    } catch (error) {
      slots[slot] = { key: marker.key, error }
    }
  })
  const outcomes: Array<{ wakeId: string; outcome: WakeOutcome }> = []
  const errors: Array<{ key: string; error: unknown }> = []
  for (const entry of slots) {
    if (entry === undefined) continue
    if ('outcome' in entry) outcomes.push(entry)
    else errors.push(entry)
    // A due wake still in the index: the next tick must come at the interval's pace.
    if (!('outcome' in entry) || !FINISHED.has(entry.outcome)) notePending(horizon, now)
  }
  return { now, outcomes, errors, nextDueAt: horizon.nextDueAt }
}

/** Outcomes after which the wake's marker is gone (or, for `fired` and `redelivered`, normally is). */
const FINISHED: ReadonlySet<WakeOutcome> = new Set(['fired', 'redelivered', 'archived', 'failed'])

/** The handler of `record`: its cause's in `handlers`, else the built-in one of a worker's wake. */
function handlerOf(backend: Backend, config: Parsed, record: WakeRecord): WakeHandler | undefined {
  const own = config.handlers[record.cause as WakeCause]
  if (own !== undefined) return own
  if (
    config.daemons &&
    record.target.kind === 'daemon' &&
    (record.cause === 'interval' || record.cause === 'event')
  ) {
    return async (wake) => {
      await handleDaemonWake(backend, wake, config.clock)
    }
  }
  const workers = config.workers
  if (
    workers === undefined ||
    record.target.kind !== 'worker' ||
    (record.cause !== 'timeout' &&
      record.cause !== 'event' &&
      record.cause !== 'schedule' &&
      record.cause !== 'webhook')
  ) {
    return undefined
  }
  return async (wake) => {
    await handleWorkerWake(backend, wake, workers, config.clock)
  }
}

/**
 * One due wake under its lease. The decision (`pending` to `fired`) is a put
 * with `lease` and `ifMatch` together: the backend checks in one atomic step
 * that the lease is still the key's current, unexpired one and that the
 * record is the version read under it. A dispatcher that lost the lease (it
 * froze past the ttl and another took the key) or raced a cancel is refused.
 */
async function processWake(
  backend: Backend,
  config: Parsed,
  wakeId: string,
  now: number,
  order: ClaimTurn,
  sameTarget: { readonly gate: SameTargetGate; readonly slot: number } | null,
  busy: () => void,
): Promise<WakeOutcome> {
  const key = recordKeyOfId(wakeId)
  let lease: Awaited<ReturnType<typeof takeWake>>
  try {
    lease = await takeWake(backend, key, config.dispatcherId, config.leaseTtlMs)
  } catch (error) {
    order.claimed()
    throw error
  }
  if (lease === null) {
    order.claimed()
    return 'busy'
  }
  let release = true
  let leave: (() => void) | undefined
  try {
    let stored: NonNullable<Awaited<ReturnType<Backend['get']>>>
    let record: WakeRecord
    // The claim settles once the record is read: by then the wake has
    // entered the same-target gate, so every later wake sees it there.
    try {
      const found = await backend.get(key)
      if (found === null) {
        // registerWake writes the record before the marker: a marker without a
        // record was not written by the runtime.
        throw wakeError('WAKE_CORRUPT', `The wake index names ${wakeId}, which has no record`, {
          key,
          wakeId,
        })
      }
      stored = found
      record = decodeWake(stored.value, key)
      if (sameTarget !== null) leave = sameTarget.gate.enter(record.target, sameTarget.slot)
    } finally {
      order.claimed()
    }
    const writer = { writerId: config.dispatcherId }
    const step = nextStep(record)
    if (step === 'archive') {
      busy()
      await unindexWake(backend, wakeId)
      release = false // final record, as after a delivery
      return 'archived'
    }
    const handler = handlerOf(backend, config, record)
    if (handler === undefined) return 'unhandled'
    // The ordering guarantee: no firing decision while an earlier-due wake is unclaimed.
    await order.before
    const earlier = sameTarget?.gate.earlier(record.target, sameTarget.slot) ?? null
    if (earlier !== null) {
      // An earlier-due wake of the same worker is being fired in this tick.
      // Let go of this one (so that wake's resume can cancel it), wait for
      // it, then claim this one again and find what is left to do.
      await backend.releaseLease(lease).catch(() => false)
      release = false
      await earlier
      return await processWake(backend, config, wakeId, now, order, null, busy)
    }
    const firstFiring = step === 'fire'
    // Read at the firing, not at the tick's start, so lateness includes the tick's own work.
    const firedAt = Math.max(now, config.clock())
    const fired: FiredWake = firstFiring
      ? {
          ...record,
          state: 'fired',
          failure: null,
          firing: {
            dispatcher: config.dispatcherId,
            token: lease.token,
            firedAt,
            latenessMs: Math.max(0, firedAt - record.dueAt),
          },
          delivery: { attempts: 1, deliveredAt: null },
        }
      : {
          ...(record as FiredWake),
          failure: null,
          delivery: { attempts: (record.delivery?.attempts ?? 0) + 1, deliveredAt: null },
        }
    // Before the tick's firing writes: a polling watch is closed while it fires (tick-timer.ts).
    busy()
    const version = await writeUnderLease(backend, key, fired, stored.meta.version, lease, writer)
    if (version === null) return 'lost'
    try {
      await handler(fired)
    } catch (error) {
      if (givesUp(fired.delivery.attempts, config.maxAttempts, error)) {
        // A giving-up that fails (a backend error) leaves the wake as any failed delivery.
        const failed = await giveUp(backend, config, fired, error, version, lease).catch(
          () => false,
        )
        if (failed) return 'failed'
      }
      // Keep the lease: the wake is retried by whoever takes it after the ttl,
      // not in a hot loop on the next tick.
      release = false
      return 'handler-failed'
    }
    const delivered: WakeRecord = {
      ...fired,
      delivery: { ...fired.delivery, deliveredAt: config.clock() },
    }
    // The handler ran. If the lease was lost meanwhile, whoever took the wake
    // delivers it again (at-least-once); the firing stays recorded once.
    if ((await writeUnderLease(backend, key, delivered, version, lease, writer)) !== null) {
      await unindexWake(backend, wakeId)
      // The record is final, and a finished record is never written again
      // (cancelWake returns it without the lease): the lease is left to
      // expire rather than paying a release round trip per wake.
      release = false
    }
    return firstFiring ? 'fired' : 'redelivered'
  } finally {
    leave?.()
    if (release) await backend.releaseLease(lease).catch(() => false)
  }
}

/**
 * Gives up a fired wake whose handler failed for good: audits the failure on
 * the target worker first (so a crash in between leaves the wake to be tried
 * and audited again, never a `failed` record without its audit), then writes
 * `failed` under the lease and removes the marker. Returns `false` when the
 * worker's lease is held (`CONCURRENT_RESUME`, try later) or the fenced write
 * is refused: the wake then stays fired and undelivered.
 */
async function giveUp(
  backend: Backend,
  config: Parsed,
  fired: FiredWake,
  error: unknown,
  version: string,
  lease: Lease,
): Promise<boolean> {
  const code = isAgentStateError(error) ? error.code : null
  let audited = false
  if (fired.target.kind === 'worker') {
    try {
      audited = await auditWakeFailure(
        backend,
        fired.target.workerId,
        { holder: config.dispatcherId, clock: config.clock },
        { wakeId: fired.id, cause: fired.cause, attempts: fired.delivery.attempts, code },
      )
    } catch (auditError) {
      if (isAgentStateError(auditError, 'CONCURRENT_RESUME')) return false
      throw auditError
    }
  }
  const message = error instanceof Error ? error.message : String(error)
  const failed: WakeRecord = {
    ...fired,
    state: 'failed',
    failure: {
      failedAt: config.clock(),
      attempts: fired.delivery.attempts,
      code: code === null ? null : code.slice(0, 200),
      message: message.slice(0, 1024),
      audited,
    },
  }
  const key = recordKeyOfId(fired.id)
  const writer = { writerId: config.dispatcherId }
  if ((await writeUnderLease(backend, key, failed, version, lease, writer)) === null) return false
  await unindexWake(backend, fired.id)
  return true
}
