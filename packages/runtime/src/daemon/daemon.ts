import { type Backend, isAgentStateError, MAX_LEASE_TTL_MS } from '@agent-state/core'
import { z } from 'zod'
import type { JsonValue } from '../shared/canonical-json.js'
import { daemonError, runtimeError } from '../shared/errors.js'
import { uuidv7 } from '../shared/ids.js'
import { assertIdleWatchdog } from '../wake/daemon-interval.js'
import { armDaemonWakes } from '../wake/daemon-wakes.js'
import { assertWatchPaths } from '../wake/host-path-watch.js'
import type { Suspension, Worker, WorkerUpdate } from '../worker/index.js'
import {
  type ResumeWorkerOptions,
  resumeWorker,
  type StartWorkerOptions,
  startWorker,
} from '../worker/index.js'
import { openChangeWaiter } from './change-waiter.js'
import { type DaemonFields, daemonFields, isWrapped, storedDecidedSeq } from './daemon-fields.js'
import { createDaemonQueue, type DaemonQueue, openDaemonQueue } from './daemon-queue.js'
import { DEFAULT_VISIBILITY_TIMEOUT_MS, type Delivery, type DeliveryOptions } from './delivery.js'
import type { DaemonQueueOptions } from './queue-records.js'
import { signalQueueChange } from './queue-signals.js'
import { decideTurn } from './turn-decision.js'

/** Options of {@link Daemon.next}; the single source of their types. */
export const nextOptionsSchema = z.strictObject({
  /**
   * How long to wait for an event when the queue is empty (or another
   * delivery is live), in milliseconds. Default 0: answer at once.
   */
  waitMs: z.int().min(0).max(MAX_LEASE_TTL_MS).default(0),
  /** First poll interval where the backend has no change notification; it doubles up to `pollMaxMs`. Default 5 ms. */
  pollMinMs: z.int().min(1).max(60_000).default(5),
  /** Longest poll interval where the backend has no change notification. Default 50 ms. */
  pollMaxMs: z.int().min(1).max(60_000).default(50),
  /** Aborting it ends the wait with `null`. */
  signal: z.instanceof(AbortSignal).optional(),
})

/** What {@link Daemon.next} accepts. */
export type NextOptions = z.input<typeof nextOptionsSchema>

/** Options of {@link spawnDaemon}: the queue's, the worker's, and the delivery's. */
export interface SpawnDaemonOptions
  extends DaemonQueueOptions,
    Pick<
      StartWorkerOptions,
      'holder' | 'leaseTtlMs' | 'hooks' | 'clock' | 'transcript' | 'summary'
    > {
  /** Default a fresh UUIDv7 (the worker's default id). */
  readonly daemonId?: string
  /** Application state of the daemon loop, kept as `state.app` of the worker snapshot. */
  readonly state?: JsonValue
  /** Visibility timeout of each delivery this handle claims. */
  readonly visibilityTimeoutMs?: number
  /**
   * How many interval wakes in a row may find the daemon's queue not empty
   * (its previous wake not taken: busy, stopped or dead) before the interval
   * chain stops and the trip is recorded (docs/runtime/wakes.md, Daemon
   * wakes). 1 to 1 000 000; default none. Needs `wakeIntervalMs`.
   */
  readonly idleWatchdogAttempts?: number
}

/** Options of {@link resumeDaemon}. */
export interface ResumeDaemonOptions extends ResumeWorkerOptions {
  readonly visibilityTimeoutMs?: number
}

/**
 * A long-lived daemon this process runs: a worker (snapshot, lease, hooks,
 * audit) fed by its durable trigger queue. Events are handed over one at a
 * time with `next()`, at the loop's idle boundary; `ack` ends the turn.
 * Methods must not be called concurrently on one handle.
 */
export class Daemon {
  readonly #worker: Worker
  readonly #queue: DaemonQueue
  readonly #backend: Backend
  readonly #delivery: DeliveryOptions
  #current: Delivery | null = null
  /**
   * The next event, claimed by the last `ack` on the kept delivery lease
   * (`Delivery.ackAndClaim`) and not yet handed out by `next()`.
   */
  #kept: Delivery | null = null
  /** `performance.now()` when the call that kept it began: its lease was renewed after. */
  #keptAt = 0

  /** Use {@link spawnDaemon} or {@link resumeDaemon}. */
  constructor(backend: Backend, worker: Worker, queue: DaemonQueue, delivery: DeliveryOptions) {
    this.#backend = backend
    this.#worker = worker
    this.#queue = queue
    this.#delivery = delivery
  }

  get daemonId(): string {
    return this.#queue.daemonId
  }
  /** The worker underneath (status, lease, audit, transcript). */
  get worker(): Worker {
    return this.#worker
  }
  /** The trigger queue. */
  get queue(): DaemonQueue {
    return this.#queue
  }
  /** The application state (`state.app` of the worker snapshot). */
  get state(): JsonValue {
    const stored = this.#worker.state
    return isWrapped(stored) ? stored.app : stored
  }
  /** The delivery this handle holds, if any. */
  get inflight(): Delivery | null {
    return this.#current
  }

  /** Queues a trigger event (any process may do this with `openDaemonQueue(...).trigger`). */
  trigger(event: unknown): Promise<number> {
    return this.#queue.trigger(event)
  }

  /**
   * Queues a batch of trigger events in one conditional write, all or
   * nothing under the capacity (`DaemonQueue.triggerMany`; any process may
   * do this with `openDaemonQueue(...).triggerMany`). Resolves their
   * consecutive sequence numbers in array order.
   *
   * @throws `QUEUE_FULL` (none stored), `INVALID_EVENT`, `EVENT_TOO_LARGE`.
   */
  triggerMany(events: readonly unknown[]): Promise<number[]> {
    return this.#queue.triggerMany(events)
  }

  /**
   * Takes the next event (the head of the queue, re-deliveries first), or
   * `null` when there is none. One at a time: call `ack` or `release` first.
   *
   * First the daemon makes sure it still owns its worker (`Worker.reclaim`):
   * a daemon that idled past its lease TTL takes the lease again if nobody
   * took the daemon over meanwhile, and refuses to claim (`LEASE_LOST`,
   * nothing claimed) if somebody did. An event whose turn an earlier `ack`
   * already decided (its head write did not land) is acknowledged here and
   * never handed out again.
   *
   * With `waitMs`, an empty queue is waited on: the wait wakes on the
   * backend's change notification where it has one, on a change made through
   * the same backend instance, and else polls (`pollMinMs` to `pollMaxMs`);
   * `null` once `waitMs` passed or `signal` aborted.
   *
   * @throws `WORKER_NOT_RUNNING` after stop, `DELIVERY_IN_FLIGHT` while a
   *   delivery (this handle's, or, without `waitMs`, another consumer's) is
   *   live, `LEASE_LOST` when another owner took the daemon over,
   *   `INVALID_QUEUE_OPTIONS`.
   */
  async next(options: NextOptions = {}): Promise<Delivery | null> {
    if (this.#worker.status !== 'running') {
      throw runtimeError('WORKER_NOT_RUNNING', `Daemon ${this.daemonId} is not running`, {
        daemonId: this.daemonId,
        status: this.#worker.status,
      })
    }
    if (this.#current !== null) {
      throw daemonError('DELIVERY_IN_FLIGHT', 'Acknowledge or release the current delivery first', {
        daemonId: this.daemonId,
        seq: this.#current.seq,
      })
    }
    const parsed = nextOptionsSchema.safeParse(options)
    if (!parsed.success) {
      const path = parsed.error.issues[0]?.path.join('.') ?? ''
      throw daemonError('INVALID_QUEUE_OPTIONS', `Invalid next option ${path}`, {
        daemonId: this.daemonId,
        path,
      })
    }
    const { waitMs, pollMinMs, pollMaxMs, signal } = parsed.data
    if (waitMs === 0) return this.#take()
    const deadline = Date.now() + waitMs
    const waiter = openChangeWaiter(this.#backend, this.daemonId)
    try {
      let interval = pollMinMs
      for (;;) {
        waiter.reset()
        // A delivery lease that lapses or is released gives no change hint: poll for it.
        let inFlight = false
        try {
          const delivery = await this.#take()
          if (delivery !== null) return delivery
        } catch (error) {
          if (!isAgentStateError(error, 'DELIVERY_IN_FLIGHT')) throw error
          inFlight = true
        }
        const remaining = deadline - Date.now()
        if (remaining <= 0 || signal?.aborted === true) return null
        const timeout = waiter.notified && !inFlight ? remaining : Math.min(interval, remaining)
        const changed = await waiter.wait(timeout, signal)
        interval = changed ? pollMinMs : Math.min(interval * 2, pollMaxMs)
      }
    } finally {
      waiter.close()
    }
  }

  /** Reclaims the worker, then claims, finishing the acknowledgement of decided events. */
  async #take(): Promise<Delivery | null> {
    try {
      await this.#worker.reclaim()
    } catch (error) {
      // Taken over: the new owner gets the kept event at once, its attempt not counted (if
      // that fails too, the kept claim lapses after the visibility timeout instead).
      if (isAgentStateError(error, 'LEASE_LOST')) await this.#giveBackKept().catch(() => undefined)
      throw error
    }
    let delivery =
      (await this.#takeKept()) ??
      (await this.#queue.claim({
        holder: this.#worker.lease?.holder ?? this.#delivery.holder,
        ...this.#delivery,
      }))
    for (;;) {
      const decided = this.#decidedSeq()
      if (delivery === null || decided === null || delivery.seq > decided) {
        this.#current = delivery
        return delivery
      }
      // Its turn is stored already (an ack whose head write did not land): move the head,
      // keeping the lease for the event after it.
      delivery = await delivery.ackAndClaim()
    }
  }

  /**
   * The kept delivery, if it is still this handle's: handed out as is while
   * its lease is younger than half the visibility timeout (measured on the
   * local monotonic clock from before its renewal, so never late), else
   * renewed first. A renewal refused with `LEASE_LOST` (it lapsed and
   * another consumer claimed the event; tokens decide, never holder names)
   * drops it, and `next()` claims afresh.
   */
  async #takeKept(): Promise<Delivery | null> {
    const kept = this.#kept
    if (kept === null) return null
    this.#kept = null
    const visibility = this.#delivery.visibilityTimeoutMs ?? DEFAULT_VISIBILITY_TIMEOUT_MS
    if (performance.now() - this.#keptAt < visibility / 2) return kept
    try {
      await kept.heartbeat()
      return kept
    } catch (error) {
      if (isAgentStateError(error, 'LEASE_LOST')) return null
      this.#kept = kept
      throw error
    }
  }

  /** Gives the kept delivery back unseen (its attempt not counted); a stale one is back already. */
  async #giveBackKept(): Promise<void> {
    const kept = this.#kept
    if (kept === null) return
    this.#kept = null
    await kept.releaseUnseen().catch((error: unknown) => {
      if (!isAgentStateError(error, 'LEASE_LOST')) throw error
    })
  }

  /** Keeps `next` (the event after an acknowledged one, on the kept lease) for `next()`. */
  #keep(next: Delivery | null, startedAt: number): void {
    if (next === null) return
    this.#kept = next
    this.#keptAt = startedAt
  }

  /**
   * Ends the turn. Without `update`: acknowledges `delivery` (fenced;
   * `LEASE_LOST` if it went stale). With `update`: one decision, the
   * worker's fenced checkpoint with the update, one more iteration and the
   * event's sequence number (`decidedSeq`); then the head moves. If the
   * checkpoint fails (for example `LEASE_LOST`: the daemon was taken over),
   * the event is not acknowledged, the delivery is given back and the error
   * is thrown; if only the head write fails, the turn stands and the next
   * `next()` moves the head (see `decideTurn`). A daemon that idled past its
   * lease TTL first takes its lease again, as in `next()`.
   *
   * The head write keeps the delivery lease (`Delivery.ackAndClaim`): it
   * also claims the next queued event for this daemon, which the next
   * `next()` hands out without releasing and acquiring the lease again.
   */
  async ack(delivery: Delivery, update?: WorkerUpdate): Promise<void> {
    const startedAt = performance.now()
    await this.#giveBackKept()
    try {
      if (update === undefined) {
        this.#keep(await delivery.ackAndClaim(), startedAt)
        return
      }
      const next = await decideTurn(
        delivery,
        async () => {
          await this.#worker.reclaim()
          await this.#worker.checkpoint({
            ...update,
            iterations: update.iterations ?? 1,
            state: await this.#wrap(update.state ?? this.state, delivery),
          })
        },
        (decided) => decided.ackAndClaim(),
      )
      this.#keep(next, startedAt)
    } finally {
      if (this.#current === delivery) this.#current = null
    }
  }

  /** Gives the current delivery back to the head of the queue. */
  async release(delivery: Delivery): Promise<void> {
    await delivery.release().finally(() => {
      if (this.#current === delivery) this.#current = null
    })
  }

  /**
   * Renews the worker's lease (taking it again if it lapsed and nobody took
   * the daemon over; see `Worker.reclaim`) and the current delivery's
   * visibility timeout (or the kept one's, dropped if it went stale).
   */
  async heartbeat(): Promise<void> {
    await this.#worker.reclaim()
    await this.#worker.heartbeat()
    if (this.#current !== null) {
      await this.#current.heartbeat()
    } else if (this.#kept !== null) {
      const startedAt = performance.now()
      try {
        await this.#kept.heartbeat()
        this.#keptAt = startedAt
      } catch (error) {
        // Lapsed and claimed elsewhere: not this daemon's any more, and not a takeover of it.
        if (!isAgentStateError(error, 'LEASE_LOST')) throw error
        this.#kept = null
      }
    }
  }

  /**
   * Stops the daemon and keeps its state (the worker is suspended). An event
   * in flight (or claimed by the last `ack` and not yet handed out, which
   * goes back with its attempt uncounted) is put back at the head of the
   * queue first, so `resumeDaemon` replays it before anything else
   * (at-least-once). The daemon
   * fields are persisted in the snapshot.
   */
  async stop(reason = 'daemon stopped', update: WorkerUpdate = {}): Promise<Suspension> {
    // The kept event was never handed out: it goes back as it was, first in the queue.
    await this.#giveBackKept()
    const current = this.#current
    if (current !== null) {
      this.#current = null
      await current.release().catch((error: unknown) => {
        // Already expired and maybe taken over: it is back in the queue either way.
        if (!isAgentStateError(error, 'LEASE_LOST')) throw error
      })
    }
    // A daemon that idled past its lease TTL takes it again first (LEASE_LOST if taken over).
    if (this.#worker.status === 'running' && this.#worker.lease !== null) {
      await this.#worker.reclaim()
    }
    const suspension = await this.#worker.suspend(
      { reason, initiator: 'operator' },
      { ...update, state: await this.#wrap(update.state ?? this.state) },
    )
    signalQueueChange(this.#backend, this.daemonId)
    return suspension
  }

  /** The stored `decidedSeq` (see {@link DaemonFields}). */
  #decidedSeq(): number | null {
    return storedDecidedSeq(this.#worker.state)
  }

  /**
   * The worker state to store: `app` and the daemon fields. With `deciding`,
   * the fields describe the queue as it is once that delivery is
   * acknowledged, and record it as decided.
   */
  async #wrap(app: JsonValue, deciding?: Delivery): Promise<JsonValue> {
    const fields =
      deciding === undefined
        ? await daemonFields(this.#queue, this.#current, this.#decidedSeq())
        : await daemonFields(this.#queue, null, deciding.seq, 1)
    return { app, daemon: { ...fields } }
  }
}

/**
 * Spawns a daemon: creates its queue (create-only) and starts its worker
 * under the same id. The backend plus the id is where the daemon persists.
 *
 * @throws `INVALID_DAEMON_ID`, `INVALID_QUEUE_OPTIONS`, `DAEMON_EXISTS`, `WORKER_EXISTS`.
 */
export async function spawnDaemon(
  backend: Backend,
  options: SpawnDaemonOptions = {},
): Promise<Daemon> {
  const {
    daemonId,
    state,
    visibilityTimeoutMs,
    holder,
    leaseTtlMs,
    hooks,
    clock,
    transcript,
    summary,
  } = options
  const { capacity, maxEventBytes, wakeIntervalMs, watchPaths, idleWatchdogAttempts, path } =
    options
  const id = daemonId ?? uuidv7()
  assertIdleWatchdog(idleWatchdogAttempts, wakeIntervalMs, id)
  assertWatchPaths(watchPaths, id)
  const queue = await createDaemonQueue(
    backend,
    id,
    defined({ capacity, maxEventBytes, wakeIntervalMs, watchPaths, path }),
    clock,
  )
  const app = state ?? null
  const worker = await startWorker(backend, {
    workerId: id,
    state: { app, daemon: { ...(await daemonFields(queue, null, null)) } },
    ...defined({ holder, leaseTtlMs, hooks, clock, transcript, summary }),
  })
  await armDaemonWakes(
    backend,
    id,
    {
      intervalMs: queue.config.wakeIntervalMs,
      watchPaths: queue.config.watchPaths,
      idleWatchdogAttempts: idleWatchdogAttempts ?? null,
    },
    clock ?? Date.now,
  )
  return new Daemon(backend, worker, queue, defined({ holder, visibilityTimeoutMs }))
}

/**
 * Resumes a stopped daemon in this process (or, with `recoverRunning`, one
 * whose process died). Queued events and the event that was in flight are
 * still in the queue, in order, and `next()` hands them out again, the
 * interrupted one first.
 *
 * @throws `DAEMON_NOT_FOUND` plus `resumeWorker`'s codes (`CONCURRENT_RESUME`,
 *   `WORKER_NOT_SUSPENDED`, `WORKER_CLOSED`, ...).
 */
export async function resumeDaemon(
  backend: Backend,
  daemonId: string,
  options: ResumeDaemonOptions = {},
): Promise<Daemon> {
  const queue = await openDaemonQueue(backend, daemonId, options.clock)
  const { visibilityTimeoutMs, ...workerOptions } = options
  const worker = await resumeWorker(backend, daemonId, { cause: 'daemon_resume', ...workerOptions })
  // Re-arms the interval chain if the watchdog tripped or it ended (a no-op otherwise).
  await armDaemonWakes(
    backend,
    daemonId,
    {
      intervalMs: queue.config.wakeIntervalMs,
      watchPaths: queue.config.watchPaths,
      idleWatchdogAttempts: null,
    },
    options.clock ?? Date.now,
  )
  signalQueueChange(backend, daemonId)
  return new Daemon(
    backend,
    worker,
    queue,
    defined({ holder: options.holder, visibilityTimeoutMs }),
  )
}

/** Drops `undefined` fields (exactOptionalPropertyTypes). */
function defined<T extends Record<string, unknown>>(
  value: T,
): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>
  }
}
