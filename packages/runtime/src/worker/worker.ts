import { AgentStateError, type Backend, type Clock, isAgentStateError } from '@agent-state/core'
import type { Run } from '../run/run.js'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { workerSnapshotKey } from '../shared/layout.js'
import {
  acquireOwned,
  type OwnedLease,
  releaseQuietly,
  renewalDue,
  renewOwned,
} from '../shared/owned-lease.js'
import { type AuditEntry, appendAudit } from './audit.js'
import { type LifecycleHookEvent, type LifecycleHooks, runPostHook, runPreHook } from './hooks.js'
import {
  type CloudSession,
  defaultResumeBy,
  dispatchResumeBy,
  type ResumeBy,
  type TriggerDispatcher,
} from './resume-by.js'
import type { ResumeConditions } from './resume-conditions.js'
import type { ResumeReminder, SnapshotBody, WorkerStatus } from './snapshot-codec.js'
import { loadSnapshot, storeSnapshot } from './snapshot-store.js'
import {
  checkSuspendRequest,
  clearSuspendRequest,
  type PendingSuspend,
  readSuspendRequest,
  type SuspendRequest,
  settledSuspension,
} from './suspend-request.js'
import { conditionFlags, type Suspension } from './suspension.js'
import type { WorkerEvents } from './worker-events.js'
import { openWorkerRun, type WorkerRunOptions } from './worker-run.js'

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

/** The per-handle settings a {@link Worker} runs with; internal. */
export interface WorkerSettings {
  readonly hooks: LifecycleHooks
  readonly clock: Clock
  readonly events?: WorkerEvents
  readonly resumeBy?: ResumeBy
  readonly triggers?: TriggerDispatcher
  readonly cloudSession?: CloudSession
}

/** Everything a {@link Worker} handle is built from; internal. */
export interface WorkerInternals {
  readonly backend: Backend
  readonly body: SnapshotBody
  readonly version: string
  readonly owned: OwnedLease
  readonly settings: WorkerSettings
  /** The worker's run, already reopened under `owned` (by `resumeWorker`'s `run`). */
  readonly run?: Run | null
}

/**
 * A worker this process owns (it holds the snapshot lease while running).
 * Every write is a fenced, compare-and-set snapshot write, so once another
 * owner has taken over, this handle can no longer change the stored state
 * (`LEASE_LOST`). Methods must not be called concurrently on one handle.
 */
export class Worker {
  readonly #backend: Backend
  readonly #settings: WorkerSettings
  #body: SnapshotBody
  #version: string
  #owned: OwnedLease | null
  #run: Run | null

  /** Use `startWorker` or `resumeWorker`. */
  constructor(internals: WorkerInternals) {
    this.#backend = internals.backend
    this.#settings = internals.settings
    this.#body = internals.body
    this.#version = internals.version
    this.#owned = internals.owned
    this.#run = internals.run ?? null
  }

  /** The worker's id. */
  get workerId(): string {
    return this.#body.workerId
  }
  /** The lifecycle state as this handle last persisted it. */
  get status(): WorkerStatus {
    return this.#body.status
  }
  /** The application state. */
  get state(): JsonValue {
    return this.#body.state
  }
  /** The working transcript (empty after a `continueTranscript: false` resume). */
  get transcript(): readonly JsonValue[] {
    return this.#body.transcript
  }
  /** Transcripts set aside by `continueTranscript: false` resumes, oldest first. */
  get transcriptArchive(): SnapshotBody['transcriptArchive'] {
    return this.#body.transcriptArchive
  }
  /** The transcript summary. */
  get summary(): string | null {
    return this.#body.summary
  }
  /** Completed loop turns. */
  get iterationsCompleted(): number {
    return this.#body.iterationsCompleted
  }
  /** The input given to the latest resume, or `null`. */
  get resumeInput(): JsonValue {
    return this.#body.resume?.input ?? null
  }
  /** The lease held while running; `null` once suspended, done or closed. */
  get lease() {
    return this.#owned?.lease ?? null
  }
  /** The Suspension envelope while suspended. */
  get suspension(): Suspension | null {
    return this.#body.suspension
  }
  /** The resume conditions (with payloads) while suspended. */
  get conditions(): ResumeConditions | null {
    return this.#body.conditions
  }
  /** The audit trail stored with the worker, oldest first. */
  get audit(): readonly AuditEntry[] {
    return this.#body.audit
  }
  /** The snapshot key in the backend. */
  get snapshotKey(): string {
    return workerSnapshotKey(this.#body.workerId)
  }
  /** The id of the run this worker owns (recorded by `openRun`), or `null`. */
  get runId(): string | null {
    return this.#body.run?.runId ?? null
  }
  /**
   * The worker's run as this handle holds it open (by `openRun`, `reopenRun`
   * or `resumeWorker`'s `run`), or `null`: none, not reopened yet, completed
   * before the resume, or released by a suspend or completion.
   */
  get run(): Run | null {
    return this.#run
  }

  /**
   * Opens run `runId` (created when new) owned by this worker: the run's
   * leases are kept subordinate to the worker's lease, and the run id is
   * recorded in the snapshot first (a fenced write), so every later
   * `resumeWorker` with `run` reopens it under the resumed owner's lease.
   * A worker owns one run; asking for another is `INVALID_ARGUMENT`.
   *
   * @throws `WORKER_NOT_RUNNING`, `INVALID_ARGUMENT`, `RUN_COMPLETED`, what
   *   `openRun` throws (`RUN_OWNED`, `RUN_NEEDS_ATTENTION`, ...), `LEASE_LOST`.
   */
  async openRun(runId: string, options: WorkerRunOptions): Promise<Run> {
    this.#requireRunning('open a run of')
    const recorded = this.runId
    if (recorded !== null && recorded !== runId) {
      throw new AgentStateError(
        'INVALID_ARGUMENT',
        `Worker ${this.workerId} owns run ${recorded}; it cannot open run ${runId}`,
        { context: { workerId: this.workerId, runId: recorded, requested: runId } },
      )
    }
    if (this.#run !== null && this.#run.runId === runId) return this.#run
    // Recorded before the open: a crash in between leaves a link to a run the resume creates.
    if (recorded === null) await this.#persist({ ...this.#body, run: { runId } })
    return this.#openOwnRun(options, 'run_opened')
  }

  /**
   * Reopens the run this worker owns under its current lease (after a
   * `resumeWorker` without `run`, such as a wake handler's): a new attempt,
   * reconciling what the previous owner left `submitted` or `unknown` before
   * anything is dispatched; audited `run_reopened`. Returns the open run when
   * this handle already holds it.
   *
   * @throws `WORKER_NOT_RUNNING`, `INVALID_ARGUMENT` (the worker owns no run),
   *   `RUN_COMPLETED`, what `openRun` throws, `LEASE_LOST`.
   */
  async reopenRun(options: WorkerRunOptions): Promise<Run> {
    return this.#openOwnRun(options, 'run_reopened')
  }

  async #openOwnRun(options: WorkerRunOptions, event: 'run_opened' | 'run_reopened'): Promise<Run> {
    const owned = this.#requireRunning('open the run of')
    const runId = this.runId
    if (runId === null) {
      throw new AgentStateError('INVALID_ARGUMENT', `Worker ${this.workerId} owns no run`, {
        context: { workerId: this.workerId },
      })
    }
    if (this.#run !== null) return this.#run
    const run = await openWorkerRun(
      this.#backend,
      runId,
      owned.lease,
      this.#settings.clock,
      options,
    )
    if (run === null) {
      throw runtimeError('RUN_COMPLETED', `Run ${runId} of worker ${this.workerId} is completed`, {
        runId,
        workerId: this.workerId,
      })
    }
    try {
      // Audited as a resume's reopen is, in the same fenced write that proves this lease still owns the worker.
      await this.#persist({
        ...this.#body,
        audit: this.#audited(this.#body.audit, event, {
          runId,
          attemptId: run.attempt.attemptId,
          attemptCount: run.attemptCount,
        }),
      })
    } catch (error) {
      await run.close()
      throw error
    }
    this.#run = run
    return run
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

  /**
   * The suspend a parent or operator asked for with `suspendWorker`, or
   * `null`. Check it at each turn boundary and pass it to `suspend`, which
   * consumes it.
   */
  async suspendRequested(): Promise<PendingSuspend | null> {
    return readSuspendRequest(this.#backend, this.workerId)
  }

  /** Renews the lease; call it within the TTL during long turns. Throws `LEASE_LOST` once superseded. */
  async heartbeat(): Promise<void> {
    this.#owned = await renewOwned(this.#backend, this.#requireRunning('heartbeat'))
  }

  /**
   * Makes sure this handle still owns the worker before it acts after a
   * pause (a daemon waking from idle): nothing while the lease is young,
   * a renewal once half its TTL has passed, and once it has lapsed, a new
   * lease, kept only if nobody wrote the worker since this handle's last
   * write. That check is the fenced compare-and-set of the snapshot that
   * records the new owner (audited `lease_retaken`), so a takeover (for
   * example `resumeWorker` with `recoverRunning`) is never undone. A run this
   * handle held open is released then (`run` is `null`): `reopenRun` reopens
   * it under the retaken lease.
   *
   * @throws `LEASE_LOST` when another owner holds or took over the worker
   *   (nothing is written then), `WORKER_NOT_RUNNING`.
   */
  async reclaim(): Promise<void> {
    const owned = this.#requireRunning('reclaim')
    const due = renewalDue(owned)
    if (due === 'none') return
    if (due === 'renew') {
      try {
        this.#owned = await renewOwned(this.#backend, owned)
        return
      } catch (error) {
        if (!isAgentStateError(error, 'LEASE_LOST')) throw error
      }
    }
    // Our own lapsed grant, if it is still the key's current one, goes first: on an observer
    // clock (S3) a contender (us, now) would otherwise have to watch it for a whole TTL.
    await releaseQuietly(this.#backend, owned.lease)
    let retaken: OwnedLease
    try {
      retaken = await acquireOwned(
        this.#backend,
        this.snapshotKey,
        owned.lease.holder,
        owned.lease.ttlMs,
      )
    } catch (error) {
      if (isAgentStateError(error, 'LEASE_HELD')) throw this.#takenOver(error)
      throw error
    }
    this.#owned = retaken
    try {
      await this.#persist({
        ...this.#body,
        owner: { holder: retaken.lease.holder, token: retaken.lease.token },
        audit: this.#audited(this.#body.audit, 'lease_retaken', {
          previousToken: owned.lease.token,
        }),
      })
    } catch (error) {
      // The handle keeps its lapsed lease: every later write of it is refused by the fence.
      this.#owned = owned
      await releaseQuietly(this.#backend, retaken.lease)
      if (isAgentStateError(error, 'PRECONDITION_FAILED')) throw this.#takenOver(error)
      throw error
    }
    // The run's leases hung from the lapsed lease, so its writes would be refused: release it,
    // for `reopenRun` to reopen it under the retaken lease.
    const run = this.#run
    this.#run = null
    await run?.close()
  }

  /** Persists progress while running (a fenced write). */
  async checkpoint(update: WorkerUpdate = {}): Promise<void> {
    this.#requireRunning('checkpoint')
    await this.#persist(this.#apply(update))
  }

  /**
   * Parks the worker at a turn boundary and returns its Suspension. The
   * resume owner (`request.resumeBy`, else the handle's `resumeBy`, else
   * `defaultResumeBy`) is dispatched first; then the snapshot is persisted;
   * only then does the state flip and the lease get released. If anything
   * fails before the write lands, the handle is unchanged and still running.
   *
   * On a handle that no longer runs, the state on storage decides: a
   * suspended worker's current Suspension is returned unchanged (no write, no
   * hooks, no event), a done or closed worker is `WORKER_NOT_RUNNING`, a
   * worker running under another owner is `LEASE_LOST`.
   *
   * @throws `WORKER_NOT_RUNNING`, `INVALID_SUSPEND_REASON`, `INVALID_INITIATOR`,
   *   `INVALID_RESUME_CONDITIONS`, `UNSUPPORTED_TIMEOUT_ACTION`,
   *   `TRIGGER_REGISTRATION_FAILED`, `SUSPEND_DENIED`, `LEASE_LOST`.
   */
  async suspend(request: SuspendRequest, update: WorkerUpdate = {}): Promise<Suspension> {
    if (this.#owned === null || this.#body.status !== 'running') return this.#suspensionOnStorage()
    const { reason, initiator, conditions, suspendedAtTurn } = checkSuspendRequest(
      this.workerId,
      request,
      'self',
    )
    const next = this.#apply(update)
    const flags = conditionFlags(conditions)
    const event: LifecycleHookEvent = {
      workerId: this.workerId,
      phase: 'suspend',
      reason,
      initiator,
      iterationsCompleted: next.iterationsCompleted,
      hasTrigger: flags?.hasTrigger ?? false,
      hasTimeout: flags?.hasTimeout ?? false,
      hasOnEvent: flags?.hasOnEvent ?? false,
    }
    const denied = await runPreHook(this.#settings.hooks.preSuspend, event)
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
        { workerId: this.workerId, denial: denied.reason },
      )
    }
    const draft: Suspension = {
      status: 'suspended',
      handle: { workerId: this.workerId, snapshotKey: this.snapshotKey },
      reason,
      initiator,
      conditions: flags,
      iterationsCompleted: next.iterationsCompleted,
      suspendedAt: new Date(this.#settings.clock()).toISOString(),
      suspendedAtTurn,
      snapshotKey: this.snapshotKey,
      resumeByMechanism: null,
      autoResumeTrigger: null,
    }
    const dispatch = await dispatchResumeBy(
      request.resumeBy ?? this.#settings.resumeBy ?? defaultResumeBy,
      {
        workerId: this.workerId,
        conditions,
        backend: this.#backend,
        clock: this.#settings.clock,
        ...(this.#settings.triggers === undefined ? {} : { triggers: this.#settings.triggers }),
        ...(this.#settings.cloudSession === undefined
          ? {}
          : { cloudSession: this.#settings.cloudSession }),
      },
      draft,
    )
    const suspension: Suspension = {
      ...draft,
      resumeByMechanism: dispatch.mechanism,
      autoResumeTrigger: dispatch.triggerId,
    }
    let audit = next.audit
    for (const entry of dispatch.audits) audit = this.#audited(audit, entry.event, entry.detail)
    await this.#persist({
      ...next,
      status: 'suspended',
      suspension,
      conditions,
      resume: null,
      owner: null,
      audit: this.#audited(audit, 'worker_suspended', {
        reason,
        initiator,
        hasConditions: conditions !== null,
        resumeByMechanism: dispatch.mechanism,
      }),
    })
    await this.#letGo()
    await clearSuspendRequest(this.#backend, this.workerId)
    this.#settings.events?.emit({ type: 'WorkerSuspended', workerId: this.workerId, suspension })
    await runPostHook(this.#settings.hooks, this.#settings.hooks.postSuspend, event)
    return suspension
  }

  /**
   * Natural completion: persists `done` with the result, releases the lease
   * and emits `WorkerCompleted`.
   *
   * @throws `WORKER_NOT_RUNNING` unless running; `INVALID_WORKER_RESULT`.
   */
  async complete(result: JsonValue = null, update: WorkerUpdate = {}): Promise<void> {
    this.#requireRunning('complete')
    const checked = jsonValueSchema.safeParse(result)
    if (!checked.success) {
      throw runtimeError('INVALID_WORKER_RESULT', 'A worker result must be a plain JSON value', {
        workerId: this.workerId,
        path: checked.error.issues[0]?.path.join('.') ?? '',
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
    this.#settings.events?.emit({
      type: 'WorkerCompleted',
      workerId: this.workerId,
      iterationsCompleted: this.#body.iterationsCompleted,
      completedAt: this.#body.updatedAt,
    })
  }

  async #suspensionOnStorage(): Promise<Suspension> {
    const loaded = await loadSnapshot(this.#backend, this.workerId)
    const settled = settledSuspension(loaded.body, 'suspend')
    if (settled !== null) return settled
    throw new AgentStateError(
      'LEASE_LOST',
      `Worker ${this.workerId} is running under another owner; this handle no longer owns it`,
      { context: { workerId: this.workerId, owner: loaded.body.owner?.holder ?? null } },
    )
  }

  #takenOver(cause: unknown): AgentStateError {
    return new AgentStateError(
      'LEASE_LOST',
      `Worker ${this.workerId}'s lease lapsed and another owner took it over`,
      { context: { workerId: this.workerId }, cause },
    )
  }

  #requireRunning(operation: string): OwnedLease {
    if (this.#body.status !== 'running' || this.#owned === null) {
      throw runtimeError(
        'WORKER_NOT_RUNNING',
        `Cannot ${operation} worker ${this.workerId}: it is ${this.#body.status}`,
        { workerId: this.workerId, status: this.#body.status, operation },
      )
    }
    return this.#owned
  }

  #apply(update: WorkerUpdate): SnapshotBody {
    const iterations = update.iterations ?? 0
    if (!Number.isSafeInteger(iterations) || iterations < 0) {
      throw new AgentStateError('INVALID_ARGUMENT', 'iterations must be a non-negative integer', {
        context: { workerId: this.workerId },
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
      at: new Date(this.#settings.clock()).toISOString(),
      holder: this.#owned?.lease.holder ?? 'unknown',
      token: this.#owned?.lease.token ?? null,
      detail,
    })
  }

  /** Writes `next` fenced by the lease, and adopts it only once the write landed. */
  async #persist(next: SnapshotBody): Promise<void> {
    let owned = this.#requireRunning('persist')
    // Renew ahead of time (judged on the lease's age, never by comparing clocks), so a long gap
    // between writes does not lose ownership needlessly. Past the TTL the fence decides.
    if (renewalDue(owned) === 'renew') {
      owned = await renewOwned(this.#backend, owned)
      this.#owned = owned
    }
    const body = { ...next, updatedAt: new Date(this.#settings.clock()).toISOString() }
    // A failed write throws before anything below runs: the handle keeps its old state.
    const meta = await storeSnapshot(this.#backend, body, owned.lease, { ifMatch: this.#version })
    this.#version = meta.version
    this.#body = body
  }

  async #letGo(): Promise<void> {
    const owned = this.#owned
    this.#owned = null
    // The run's record leases go first, so the next owner (whatever its holder name) opens it at once.
    const run = this.#run
    this.#run = null
    await run?.close()
    if (owned !== null) await releaseQuietly(this.#backend, owned.lease)
  }
}
