import type { Backend, Clock, Lease } from '@agent-state/core'
import { type AuditEntry, appendAudit } from './audit.js'
import { type JsonValue, jsonValueSchema } from './canonical-json.js'
import { runtimeError } from './errors.js'
import { type LifecycleHookEvent, type LifecycleHooks, runPostHook, runPreHook } from './hooks.js'
import { workerSnapshotKey } from './layout.js'
import { parseResumeConditions } from './resume-conditions.js'
import type { ResumeReminder, SnapshotBody, WorkerStatus } from './snapshot-codec.js'
import { releaseQuietly, storeSnapshot } from './snapshot-store.js'
import { SUSPEND_INITIATORS, type SuspendRequest, type Suspension } from './suspension.js'

/** What `checkpoint` and `complete` may change. */
export interface WorkerUpdate {
  /** New application state. */
  readonly state?: JsonValue
  /** New transcript (replaces the stored one). */
  readonly transcript?: readonly JsonValue[]
  /** New transcript summary. */
  readonly summary?: string | null
  /** Loop turns completed since the last write (default 0). */
  readonly iterations?: number
}

/** Everything a {@link Worker} handle is built from; internal. */
export interface WorkerInternals {
  readonly backend: Backend
  readonly body: SnapshotBody
  readonly version: string
  readonly lease: Lease
  readonly hooks: LifecycleHooks
  readonly clock: Clock
}

/**
 * A worker this process owns (it holds the snapshot lease while running).
 * Every write is a fenced, compare-and-set snapshot write, so once another
 * owner has taken over, this handle can no longer change the stored state
 * (`LEASE_LOST`). Methods must not be called concurrently on one handle.
 */
export class Worker {
  readonly #backend: Backend
  readonly #hooks: LifecycleHooks
  readonly #clock: Clock
  #body: SnapshotBody
  #version: string
  #lease: Lease | null

  /** Use `startWorker` or `resumeWorker`. */
  constructor(internals: WorkerInternals) {
    this.#backend = internals.backend
    this.#hooks = internals.hooks
    this.#clock = internals.clock
    this.#body = internals.body
    this.#version = internals.version
    this.#lease = internals.lease
  }

  get workerId(): string {
    return this.#body.workerId
  }
  /** The lifecycle state as this handle last persisted it. */
  get status(): WorkerStatus {
    return this.#body.status
  }
  get state(): JsonValue {
    return this.#body.state
  }
  get transcript(): readonly JsonValue[] {
    return this.#body.transcript
  }
  get summary(): string | null {
    return this.#body.summary
  }
  get iterationsCompleted(): number {
    return this.#body.iterationsCompleted
  }
  /** The input given to the latest resume, or `null`. */
  get resumeInput(): JsonValue {
    return this.#body.resume?.input ?? null
  }
  /** The lease held while running; `null` once suspended, done or closed. */
  get lease(): Lease | null {
    return this.#lease
  }
  /** The Suspension envelope while suspended. */
  get suspension(): Suspension | null {
    return this.#body.suspension
  }
  /** The audit trail stored with the worker, oldest first. */
  get audit(): readonly AuditEntry[] {
    return this.#body.audit
  }
  /** The snapshot key in the backend. */
  get snapshotKey(): string {
    return workerSnapshotKey(this.#body.workerId)
  }

  /**
   * The one-shot resume-continuity reminder after a `continueTranscript: true`
   * resume: returned once, then `null` (the consumption is persisted by the
   * next write). Never re-applied after a later suspend.
   */
  takeResumeReminder(): ResumeReminder | null {
    const reminder = this.#body.resume?.reminder ?? null
    if (reminder !== null && this.#body.resume !== null) {
      this.#body = { ...this.#body, resume: { ...this.#body.resume, reminder: null } }
    }
    return reminder
  }

  /** Renews the lease; call it within the TTL during long turns. Throws `LEASE_LOST` once superseded. */
  async heartbeat(): Promise<void> {
    this.#lease = await this.#backend.renewLease(this.#requireRunning('heartbeat'))
  }

  /** Persists progress while running (a fenced write). */
  async checkpoint(update: WorkerUpdate = {}): Promise<void> {
    this.#requireRunning('checkpoint')
    await this.#persist(this.#apply(update))
  }

  /**
   * Parks the worker at a turn boundary and returns its Suspension. The
   * snapshot is persisted first; only then does the state flip and the lease
   * get released. If the write fails, the handle is unchanged and still
   * running. Idempotent: on a suspended handle it returns the same
   * Suspension without writing or running hooks again.
   *
   * @throws `WORKER_NOT_RUNNING` (done/closed), `INVALID_SUSPEND_REASON`,
   *   `INVALID_RESUME_CONDITIONS`, `SUSPEND_DENIED`, `LEASE_LOST`.
   */
  async suspend(request: SuspendRequest, update: WorkerUpdate = {}): Promise<Suspension> {
    if (this.#body.status === 'suspended' && this.#body.suspension !== null)
      return this.#body.suspension
    this.#requireRunning('suspend')
    const reason = typeof request?.reason === 'string' ? request.reason.trim() : ''
    if (reason === '') {
      throw runtimeError('INVALID_SUSPEND_REASON', 'A suspend reason must be a non-empty string', {
        workerId: this.workerId,
      })
    }
    const initiator = request.initiator ?? 'self'
    if (!SUSPEND_INITIATORS.includes(initiator)) {
      throw runtimeError(
        'INVALID_SUSPEND_REASON',
        `Unknown initiator ${JSON.stringify(initiator)}`,
        {
          workerId: this.workerId,
          path: 'initiator',
        },
      )
    }
    const conditions = parseResumeConditions(request.conditions)
    const next = this.#apply(update)
    const event: LifecycleHookEvent = {
      workerId: this.workerId,
      phase: 'suspend',
      reason,
      initiator,
      iterationsCompleted: next.iterationsCompleted,
      hasTrigger: conditions?.trigger !== undefined,
      hasTimeout: conditions?.timeout !== undefined,
      hasOnEvent: conditions?.onEvent !== undefined,
    }
    const denied = await runPreHook(this.#hooks.preSuspend, event)
    if (denied !== undefined) {
      await this.#persist({
        ...this.#body,
        audit: this.#audited(this.#body.audit, 'pre_suspend_denied', {
          reason,
          denial: denied.reason,
          initiator,
        }),
      })
      throw runtimeError(
        'SUSPEND_DENIED',
        `Suspend of worker ${this.workerId} denied: ${denied.reason}`,
        {
          workerId: this.workerId,
          denial: denied.reason,
        },
      )
    }
    const now = this.#clock()
    const suspension: Suspension = {
      status: 'suspended',
      handle: { workerId: this.workerId, snapshotKey: this.snapshotKey },
      reason,
      initiator,
      conditions,
      iterationsCompleted: next.iterationsCompleted,
      suspendedAt: new Date(now).toISOString(),
      suspendedAtTurn: request.suspendedAtTurn ?? null,
      snapshotKey: this.snapshotKey,
      resumeByMechanism: request.resumeByMechanism ?? null,
      autoResumeTrigger: request.autoResumeTrigger ?? null,
    }
    await this.#persist({
      ...next,
      status: 'suspended',
      suspension,
      resume: null,
      owner: null,
      audit: this.#audited(next.audit, 'worker_suspended', {
        reason,
        initiator,
        hasConditions: conditions !== null,
      }),
    })
    await this.#letGo()
    await runPostHook(this.#hooks, this.#hooks.postSuspend, event)
    return suspension
  }

  /**
   * Natural completion: persists `done` with the result and releases the lease.
   *
   * @throws `WORKER_NOT_RUNNING` unless running.
   */
  async complete(result: JsonValue = null, update: WorkerUpdate = {}): Promise<void> {
    this.#requireRunning('complete')
    const checked = jsonValueSchema.safeParse(result)
    if (!checked.success) {
      throw runtimeError('INVALID_RESUME_INPUT', 'A worker result must be a plain JSON value', {
        workerId: this.workerId,
      })
    }
    const next = this.#apply(update)
    await this.#persist({
      ...next,
      status: 'done',
      result: checked.data,
      resume: null,
      owner: null,
      audit: this.#audited(next.audit, 'worker_completed', {}),
    })
    await this.#letGo()
  }

  #requireRunning(operation: string): Lease {
    if (this.#body.status !== 'running' || this.#lease === null) {
      throw runtimeError(
        'WORKER_NOT_RUNNING',
        `Cannot ${operation} worker ${this.workerId}: it is ${this.#body.status}`,
        { workerId: this.workerId, status: this.#body.status, operation },
      )
    }
    return this.#lease
  }

  #apply(update: WorkerUpdate): SnapshotBody {
    const iterations = update.iterations ?? 0
    if (!Number.isSafeInteger(iterations) || iterations < 0) {
      throw runtimeError('INVALID_RESUME_INPUT', 'iterations must be a non-negative integer', {
        workerId: this.workerId,
      })
    }
    return {
      ...this.#body,
      ...(update.state === undefined ? {} : { state: update.state }),
      ...(update.transcript === undefined ? {} : { transcript: [...update.transcript] }),
      ...(update.summary === undefined ? {} : { summary: update.summary }),
      iterationsCompleted: this.#body.iterationsCompleted + iterations,
    }
  }

  #audited(
    trail: readonly AuditEntry[],
    event: AuditEntry['event'],
    detail: Record<string, JsonValue>,
  ) {
    return appendAudit(trail, {
      event,
      at: new Date(this.#clock()).toISOString(),
      holder: this.#lease?.holder ?? 'unknown',
      token: this.#lease?.token ?? null,
      detail,
    })
  }

  /** Writes `next` fenced by the lease, and adopts it only once the write landed. */
  async #persist(next: SnapshotBody): Promise<void> {
    let lease = this.#requireRunning('persist')
    // Renew ahead of time so a long gap between writes does not lose ownership needlessly.
    if (lease.expiresAt - Date.now() < lease.ttlMs / 2) {
      lease = await this.#backend.renewLease(lease)
      this.#lease = lease
    }
    const body = { ...next, updatedAt: new Date(this.#clock()).toISOString() }
    // A failed write throws before anything below runs: the handle keeps its old state.
    const meta = await storeSnapshot(this.#backend, body, lease, { ifMatch: this.#version })
    this.#version = meta.version
    this.#body = body
  }

  async #letGo(): Promise<void> {
    const lease = this.#lease
    this.#lease = null
    if (lease !== null) await releaseQuietly(this.#backend, lease)
  }
}
