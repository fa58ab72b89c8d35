import { type Backend, isAgentStateError } from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'
import { daemonError, runtimeError } from '../shared/errors.js'
import { uuidv7 } from '../shared/ids.js'
import type { Suspension, Worker, WorkerUpdate } from '../worker/index.js'
import {
  type ResumeWorkerOptions,
  resumeWorker,
  type StartWorkerOptions,
  startWorker,
} from '../worker/index.js'
import { createDaemonQueue, type DaemonQueue, openDaemonQueue } from './daemon-queue.js'
import type { Delivery, DeliveryOptions } from './delivery.js'
import type { DaemonQueueOptions } from './queue-records.js'
import { signalQueueChange } from './queue-signals.js'

/**
 * The daemon fields, kept in the worker snapshot's free-form state
 * (`state.daemon`, beside the application's `state.app`) and refreshed on
 * spawn, on every `ack` that carries an update, and on `stop`.
 */
export interface DaemonFields {
  readonly pendingEventCount: number
  readonly queuedEventCount: number
  readonly inflightEvent: { readonly seq: number; readonly attempt: number } | null
  readonly wakeIntervalMs: number | null
  readonly watchPaths: readonly string[]
  readonly eventQueueCapacity: number
}

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
   * Takes the next event (the head of the queue, re-deliveries first), or
   * `null` when there is none. One at a time: call `ack` or `release` first.
   *
   * @throws `WORKER_NOT_RUNNING` after stop, `DELIVERY_IN_FLIGHT` while a
   *   delivery (this handle's or another consumer's) is live.
   */
  async next(): Promise<Delivery | null> {
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
    this.#current = await this.#queue.claim({
      holder: this.#worker.lease?.holder ?? this.#delivery.holder,
      ...this.#delivery,
    })
    return this.#current
  }

  /**
   * Ends the turn: acknowledges `delivery` (fenced; `LEASE_LOST` if it went
   * stale) and, when `update` is given, checkpoints the worker with it and
   * one more iteration.
   */
  async ack(delivery: Delivery, update?: WorkerUpdate): Promise<void> {
    await delivery.ack().finally(() => {
      if (this.#current === delivery) this.#current = null
    })
    if (update !== undefined) {
      await this.#worker.checkpoint({
        ...update,
        iterations: update.iterations ?? 1,
        state: await this.#wrap(update.state ?? this.state),
      })
    }
  }

  /** Gives the current delivery back to the head of the queue. */
  async release(delivery: Delivery): Promise<void> {
    await delivery.release().finally(() => {
      if (this.#current === delivery) this.#current = null
    })
  }

  /** Renews the worker's lease and the current delivery's visibility timeout. */
  async heartbeat(): Promise<void> {
    await this.#worker.heartbeat()
    await this.#current?.heartbeat()
  }

  /**
   * Stops the daemon and keeps its state (the worker is suspended). An event
   * in flight is put back at the head of the queue first, so `resumeDaemon`
   * replays it before anything else (at-least-once). The daemon
   * fields are persisted in the snapshot.
   */
  async stop(reason = 'daemon stopped', update: WorkerUpdate = {}): Promise<Suspension> {
    const current = this.#current
    if (current !== null) {
      this.#current = null
      await current.release().catch((error: unknown) => {
        // Already expired and maybe taken over: it is back in the queue either way.
        if (!isAgentStateError(error, 'LEASE_LOST')) throw error
      })
    }
    const suspension = await this.#worker.suspend(
      { reason, initiator: 'operator' },
      { ...update, state: await this.#wrap(update.state ?? this.state) },
    )
    signalQueueChange(this.#backend, this.daemonId)
    return suspension
  }

  async #wrap(app: JsonValue): Promise<JsonValue> {
    return { app, daemon: { ...(await daemonFields(this.#queue, this.#current)) } }
  }
}

async function daemonFields(queue: DaemonQueue, current: Delivery | null): Promise<DaemonFields> {
  const counts = await queue.counts()
  const inflight = current === null ? 0 : 1
  return {
    pendingEventCount: counts.queuedCount - inflight,
    queuedEventCount: counts.queuedCount,
    inflightEvent: current === null ? null : { seq: current.seq, attempt: current.attempt },
    wakeIntervalMs: queue.config.wakeIntervalMs,
    watchPaths: queue.config.watchPaths,
    eventQueueCapacity: queue.capacity,
  }
}

function isWrapped(value: JsonValue): value is { app: JsonValue; daemon: JsonValue } {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    'daemon' in value &&
    'app' in value
  )
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
  const { capacity, maxEventBytes, wakeIntervalMs, watchPaths } = options
  const id = daemonId ?? uuidv7()
  const queue = await createDaemonQueue(
    backend,
    id,
    defined({ capacity, maxEventBytes, wakeIntervalMs, watchPaths }),
    clock,
  )
  const app = state ?? null
  const worker = await startWorker(backend, {
    workerId: id,
    state: { app, daemon: { ...(await daemonFields(queue, null)) } },
    ...defined({ holder, leaseTtlMs, hooks, clock, transcript, summary }),
  })
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
