import { hostname } from 'node:os'
import {
  AgentStateError,
  type Backend,
  type Clock,
  isAgentStateError,
  type Lease,
  MAX_LEASE_TTL_MS,
  systemClock,
} from '@agent-state/core'
import type { z } from 'zod'
import { type AuditEntry, appendAudit } from './audit.js'
import { type JsonValue, jsonValueSchema } from './canonical-json.js'
import { runtimeError } from './errors.js'
import { type LifecycleHookEvent, type LifecycleHooks, runPostHook, runPreHook } from './hooks.js'
import { assertWorkerId, uuidv7 } from './ids.js'
import { workerSnapshotKey } from './layout.js'
import type { ResumeReminder, SnapshotBody } from './snapshot-codec.js'
import {
  type LoadedSnapshot,
  loadSnapshot,
  releaseQuietly,
  storeSnapshot,
} from './snapshot-store.js'
import { Worker } from './worker.js'

/** Default lease time-to-live of a running worker: 5 minutes. */
export const DEFAULT_WORKER_LEASE_TTL_MS = 5 * 60 * 1000

/** Options shared by the lifecycle functions. */
export interface WorkerOwnerOptions {
  /** Who takes the lease; default `<hostname>:<pid>:<random>`. 1 to 256 characters. */
  readonly holder?: string
  /** Lease time-to-live while running; renewed on writes and by `heartbeat()`. Default 5 minutes. */
  readonly leaseTtlMs?: number
  readonly hooks?: LifecycleHooks
  /** Clock for timestamps in snapshots, suspensions and the audit trail. Default `Date.now`. */
  readonly clock?: Clock
}

/** Options of {@link startWorker}. */
export interface StartWorkerOptions extends WorkerOwnerOptions {
  /** Default a fresh UUIDv7. */
  readonly workerId?: string
  readonly state?: JsonValue
  readonly transcript?: readonly JsonValue[]
  readonly summary?: string | null
}

/** Options of {@link resumeWorker}. */
export interface ResumeWorkerOptions extends WorkerOwnerOptions {
  /** New input for the resumed worker; plain JSON (`INVALID_RESUME_INPUT` otherwise). */
  readonly input?: unknown
  /** Validates `input` further; a failure is `INVALID_RESUME_INPUT`. */
  readonly inputSchema?: z.ZodType
  /**
   * `true` (default): keep the transcript and add the one-shot
   * resume-continuity reminder. `false`: resume from the summary plus the
   * new input only (the transcript is cleared).
   */
  readonly continueTranscript?: boolean
  /** Why it is resumed (a trigger id, `operator`...), shown in the reminder and the audit. */
  readonly cause?: string
  /**
   * Also take over a worker stored as `running` whose owner is gone (its lease
   * expired or was released without a suspend, e.g. after a crash). A live
   * owner still wins: its lease makes this fail with `CONCURRENT_RESUME`.
   * Default `false`: resuming a running worker is `WORKER_NOT_SUSPENDED`.
   */
  readonly recoverRunning?: boolean
}

function defaultHolder(): string {
  return `${hostname()}:${process.pid}:${uuidv7().slice(-12)}`
}

function ownerSettings(options: WorkerOwnerOptions) {
  const ttlMs = options.leaseTtlMs ?? DEFAULT_WORKER_LEASE_TTL_MS
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_TTL_MS) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `leaseTtlMs must be an integer from 1 to ${MAX_LEASE_TTL_MS}`,
    )
  }
  return {
    holder: options.holder ?? defaultHolder(),
    ttlMs,
    hooks: options.hooks ?? {},
    clock: options.clock ?? systemClock,
  }
}

function audit(
  trail: readonly AuditEntry[],
  event: AuditEntry['event'],
  lease: Lease,
  clock: Clock,
  detail: Record<string, JsonValue>,
): AuditEntry[] {
  return appendAudit(trail, {
    event,
    at: new Date(clock()).toISOString(),
    holder: lease.holder,
    token: lease.token,
    detail,
  })
}

/**
 * Takes a worker's lease. `LEASE_HELD` becomes `onHeld`'s error, so the
 * loser of a race learns why in the runtime's terms.
 */
async function takeLease(
  backend: Backend,
  workerId: string,
  holder: string,
  ttlMs: number,
  onHeld: (holder: unknown) => AgentStateError,
): Promise<Lease> {
  try {
    return await backend.acquireLease(workerSnapshotKey(workerId), { holder, ttlMs })
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_HELD')) throw onHeld(error.context.holder)
    throw error
  }
}

/**
 * Creates a worker in the `running` state, owned by this process: takes the
 * snapshot's lease, then writes the first snapshot create-only.
 *
 * @throws `WORKER_EXISTS` when the id is taken; `INVALID_WORKER_ID`.
 */
export async function startWorker(
  backend: Backend,
  options: StartWorkerOptions = {},
): Promise<Worker> {
  const settings = ownerSettings(options)
  const workerId = options.workerId ?? uuidv7(settings.clock())
  assertWorkerId(workerId)
  const initial = jsonValueSchema.safeParse({
    state: options.state ?? null,
    transcript: options.transcript ?? [],
  })
  if (!initial.success) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      'A worker state and transcript must be plain JSON',
    )
  }
  const exists = () =>
    runtimeError('WORKER_EXISTS', `Worker ${workerId} already exists`, { workerId })
  const lease = await takeLease(backend, workerId, settings.holder, settings.ttlMs, exists)
  const now = new Date(settings.clock()).toISOString()
  const { state, transcript } = initial.data as { state: JsonValue; transcript: JsonValue[] }
  const body: SnapshotBody = {
    workerId,
    status: 'running',
    iterationsCompleted: 0,
    state,
    transcript,
    summary: options.summary ?? null,
    result: null,
    suspension: null,
    resume: null,
    owner: { holder: lease.holder, token: lease.token },
    createdAt: now,
    updatedAt: now,
    audit: audit([], 'worker_started', lease, settings.clock, {}),
  }
  try {
    const meta = await storeSnapshot(backend, body, lease, { ifNoneMatch: '*' })
    return new Worker({
      backend,
      body,
      version: meta.version,
      lease,
      hooks: settings.hooks,
      clock: settings.clock,
    })
  } catch (error) {
    await releaseQuietly(backend, lease)
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) throw exists()
    throw error
  }
}

function statusError(
  snapshot: SnapshotBody,
  operation: 'resume' | 'close',
  allowRunning = false,
): AgentStateError | undefined {
  const { workerId, status } = snapshot
  if (status === 'suspended' || (status === 'running' && allowRunning)) return undefined
  if (status === 'closed' && operation === 'resume') {
    return runtimeError('WORKER_CLOSED', `Worker ${workerId} is closed and cannot be resumed`, {
      workerId,
      status,
    })
  }
  return runtimeError(
    'WORKER_NOT_SUSPENDED',
    `Cannot ${operation} worker ${workerId}: it is ${status}`,
    {
      workerId,
      status,
    },
  )
}

/**
 * Takes ownership of a suspended worker (or, with `recoverRunning`, of a
 * running one whose owner is gone): verifies its snapshot, takes the
 * snapshot's lease (so exactly one of several concurrent resumers, in any
 * process or host, wins), re-reads under the lease, runs `preResume`, and
 * persists the running state fenced by the new lease. From then on the
 * previous owner's writes fail with `LEASE_LOST`.
 *
 * @throws `SNAPSHOT_MISSING`, `SNAPSHOT_CORRUPT`, `SNAPSHOT_INCOMPATIBLE`,
 *   `WORKER_NOT_SUSPENDED` (running or done), `WORKER_CLOSED`,
 *   `CONCURRENT_RESUME` (another owner holds the lease; retryable),
 *   `INVALID_RESUME_INPUT`, `RESUME_DENIED`.
 */
export async function resumeWorker(
  backend: Backend,
  workerId: string,
  options: ResumeWorkerOptions = {},
): Promise<Worker> {
  assertWorkerId(workerId)
  const settings = ownerSettings(options)
  const input = await checkInput(workerId, options)
  const continueTranscript = options.continueTranscript ?? true
  const cause = options.cause ?? null
  // A cheap look first, so a closed, finished or corrupt worker says so without touching the lease.
  const seen = await loadSnapshot(backend, workerId)
  const recoverRunning = options.recoverRunning ?? false
  const early = statusError(seen.body, 'resume', recoverRunning)
  if (early !== undefined) throw early
  const lease = await takeLease(backend, workerId, settings.holder, settings.ttlMs, (holder) =>
    runtimeError(
      'CONCURRENT_RESUME',
      `Worker ${workerId} is being resumed or run by ${String(holder)}`,
      {
        workerId,
        holder,
      },
    ),
  )
  let loaded: LoadedSnapshot
  try {
    // The authoritative read, under the lease: someone may have resumed and parked it meanwhile.
    loaded = await loadSnapshot(backend, workerId)
    const late = statusError(loaded.body, 'resume', recoverRunning)
    if (late !== undefined) throw late
  } catch (error) {
    await releaseQuietly(backend, lease)
    throw error
  }
  const { body } = loaded
  const recovered = body.status === 'running'
  const suspension = body.suspension
  const event: LifecycleHookEvent = {
    workerId,
    phase: 'resume',
    reason: suspension?.reason ?? (recovered ? 'previous owner lost' : ''),
    initiator: suspension?.initiator ?? 'operator',
    iterationsCompleted: body.iterationsCompleted,
    hasTrigger: suspension?.conditions?.trigger !== undefined,
    hasTimeout: suspension?.conditions?.timeout !== undefined,
    hasOnEvent: suspension?.conditions?.onEvent !== undefined,
    hasInput: input !== null,
    continueTranscript,
  }
  try {
    const denied = await runPreHook(settings.hooks.preResume, event)
    if (denied !== undefined) {
      await storeSnapshot(
        backend,
        {
          ...body,
          updatedAt: new Date(settings.clock()).toISOString(),
          audit: audit(body.audit, 'pre_resume_denied', lease, settings.clock, {
            denial: denied.reason,
          }),
        },
        lease,
        { ifMatch: loaded.version },
      )
      throw runtimeError('RESUME_DENIED', `Resume of worker ${workerId} denied: ${denied.reason}`, {
        workerId,
        denial: denied.reason,
      })
    }
    const now = settings.clock()
    const reminder: ResumeReminder | null = continueTranscript
      ? {
          kind: 'system_reminder',
          dedupeKey: 'resume_continuity',
          text: continuityText(
            suspension?.reason ??
              (recovered ? 'your previous run stopped without suspending' : null),
            suspension?.suspendedAt ?? (recovered ? body.updatedAt : null),
            now,
            cause,
          ),
        }
      : null
    const next: SnapshotBody = {
      ...body,
      status: 'running',
      transcript: continueTranscript ? body.transcript : [],
      suspension: null,
      resume: {
        input,
        continueTranscript,
        resumedAt: new Date(now).toISOString(),
        cause,
        reminder,
      },
      owner: { holder: lease.holder, token: lease.token },
      updatedAt: new Date(now).toISOString(),
      audit: audit(
        body.audit,
        recovered ? 'worker_recovered' : 'worker_resumed',
        lease,
        settings.clock,
        {
          continueTranscript,
          hasInput: input !== null,
          cause,
          ...(recovered ? { previousOwner: body.owner?.holder ?? null } : {}),
        },
      ),
    }
    const meta = await storeSnapshot(backend, next, lease, { ifMatch: loaded.version })
    const worker = new Worker({
      backend,
      body: next,
      version: meta.version,
      lease,
      hooks: settings.hooks,
      clock: settings.clock,
    })
    await runPostHook(settings.hooks, settings.hooks.postResume, event)
    return worker
  } catch (error) {
    await releaseQuietly(backend, lease)
    throw error
  }
}

async function checkInput(workerId: string, options: ResumeWorkerOptions): Promise<JsonValue> {
  const raw = options.input === undefined ? null : options.input
  const json = jsonValueSchema.safeParse(raw)
  if (!json.success) {
    throw runtimeError('INVALID_RESUME_INPUT', 'Resume input must be a plain JSON value', {
      workerId,
      path: json.error.issues[0]?.path.join('.') ?? '',
    })
  }
  if (options.inputSchema !== undefined) {
    const checked = await options.inputSchema.safeParseAsync(raw)
    if (!checked.success) {
      const issue = checked.error.issues[0]
      throw runtimeError(
        'INVALID_RESUME_INPUT',
        `Invalid resume input at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
        { workerId, path: issue?.path.join('.') ?? '' },
      )
    }
  }
  return json.data
}

function continuityText(
  reason: string | null,
  suspendedAt: string | null,
  now: number,
  cause: string | null,
): string {
  const gapSeconds =
    suspendedAt === null ? null : Math.max(0, Math.round((now - Date.parse(suspendedAt)) / 1000))
  return [
    'You were suspended and have now been resumed.',
    `Suspension reason: ${reason ?? 'unknown'}.`,
    `Time suspended: ${gapSeconds === null ? 'unknown' : `${gapSeconds} s`}.`,
    `Resume cause: ${cause ?? 'explicit resume'}.`,
  ].join(' ')
}

/**
 * Rejects a suspended worker's snapshot for good (`suspended → closed`);
 * later resumes fail with `WORKER_CLOSED`. Idempotent on a closed worker.
 *
 * @throws `WORKER_NOT_SUSPENDED` (running or done), `CONCURRENT_RESUME`
 *   (someone holds the lease), `SNAPSHOT_*`.
 */
export async function closeWorker(
  backend: Backend,
  workerId: string,
  options: Pick<WorkerOwnerOptions, 'holder' | 'clock'> = {},
): Promise<void> {
  assertWorkerId(workerId)
  const settings = ownerSettings(options)
  const seen = await loadSnapshot(backend, workerId)
  if (seen.body.status === 'closed') return
  const early = statusError(seen.body, 'close')
  if (early !== undefined) throw early
  const lease = await takeLease(backend, workerId, settings.holder, 60_000, (holder) =>
    runtimeError(
      'CONCURRENT_RESUME',
      `Worker ${workerId} is being resumed or run by ${String(holder)}`,
      {
        workerId,
        holder,
      },
    ),
  )
  try {
    const loaded = await loadSnapshot(backend, workerId)
    if (loaded.body.status === 'closed') return
    const late = statusError(loaded.body, 'close')
    if (late !== undefined) throw late
    await storeSnapshot(
      backend,
      {
        ...loaded.body,
        status: 'closed',
        updatedAt: new Date(settings.clock()).toISOString(),
        audit: audit(loaded.body.audit, 'worker_closed', lease, settings.clock, {}),
      },
      lease,
      { ifMatch: loaded.version },
    )
  } finally {
    await releaseQuietly(backend, lease)
  }
}

/**
 * Reads and verifies a worker's snapshot without taking ownership (for
 * operators and dashboards).
 *
 * @throws `SNAPSHOT_MISSING`, `SNAPSHOT_CORRUPT`, `SNAPSHOT_INCOMPATIBLE`.
 */
export async function inspectWorker(backend: Backend, workerId: string): Promise<SnapshotBody> {
  assertWorkerId(workerId)
  return (await loadSnapshot(backend, workerId)).body
}
