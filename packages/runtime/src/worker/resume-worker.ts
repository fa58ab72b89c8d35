import type { AgentStateError, Backend, Clock, Lease } from '@agent-state/core'
import type { z } from 'zod'
import type { Run } from '../run/run.js'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { assertWorkerId } from '../shared/ids.js'
import { workerSnapshotKey } from '../shared/layout.js'
import { releaseQuietly } from '../shared/owned-lease.js'
import type { AuditEntry } from './audit.js'
import { type LifecycleHookEvent, runPostHook, runPreHook } from './hooks.js'
import type { ResumeReminder, SnapshotBody } from './snapshot-codec.js'
import { type LoadedSnapshot, loadSnapshot, storeSnapshot } from './snapshot-store.js'
import { clearSuspendRequest } from './suspend-request.js'
import { Worker } from './worker.js'
import {
  auditBy,
  concurrentResumeError,
  ownerSettings,
  takeLease,
  type WorkerOwnerOptions,
} from './worker-ownership.js'
import { openWorkerRun, type WorkerRunOptions } from './worker-run.js'
import {
  settleQuietly,
  type WakeOfWorker,
  wakesCancelledAudit,
  wakesToSettle,
} from './worker-wake-settle.js'

/** Options of {@link resumeWorker}. */
export interface ResumeWorkerOptions extends WorkerOwnerOptions {
  /** New input for the resumed worker; plain JSON (`INVALID_RESUME_INPUT` otherwise). */
  readonly input?: unknown
  /** Validates `input` further; a failure is `INVALID_RESUME_INPUT`. */
  readonly inputSchema?: z.ZodType
  /**
   * `true` (default): keep the transcript and add the one-shot
   * resume-continuity reminder. `false`: resume from the summary plus the
   * new input only; the previous transcript is moved to
   * `transcriptArchive`, never destroyed.
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
  /**
   * Reopen the run this worker owns (`worker.openRun`) under the new lease,
   * before the worker is recorded running: the ledger reconciles what the
   * previous owner left `submitted` or `unknown`, and the handle's `run` is
   * the open run. A failure to reopen fails the resume (the worker stays as
   * it was). Ignored for a worker without a run; a completed run is not
   * reopened (`run` stays `null`, audited `run_not_reopened`). Without this
   * option, `worker.reopenRun(options)` does it later.
   */
  readonly run?: WorkerRunOptions
}

/**
 * Why `body` cannot be resumed now, or `undefined`. A worker running because
 * someone resumed it and still holding its lease is a concurrent resume
 * (HARN-SUS-006), whether the loser looked before or after the winner
 * flipped the state, so a race always ends in `CONCURRENT_RESUME` for the
 * loser. A running worker nobody resumed, or whose owner is gone, is HARN-SUS-003.
 */
async function notResumable(
  backend: Backend,
  body: SnapshotBody,
  recoverRunning: boolean,
  holdingLease: boolean,
): Promise<AgentStateError | undefined> {
  const { workerId, status } = body
  if (status === 'suspended') return undefined
  if (status === 'closed') {
    return runtimeError('WORKER_CLOSED', `Worker ${workerId} is closed and cannot be resumed`, {
      workerId,
      status,
    })
  }
  if (status === 'running') {
    if (recoverRunning) return undefined
    // Under our own lease the previous owner is gone by definition.
    if (body.resume !== null && !holdingLease) {
      const live = await backend.getLease(workerSnapshotKey(workerId))
      if (live !== null) return concurrentResumeError(workerId, live.holder)
    }
  }
  return runtimeError('WORKER_NOT_SUSPENDED', `Cannot resume worker ${workerId}: it is ${status}`, {
    workerId,
    status,
  })
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
 *   `CONCURRENT_RESUME` (another owner holds the worker; retryable),
 *   `INVALID_RESUME_INPUT`, `RESUME_DENIED`.
 */
export async function resumeWorker(
  backend: Backend,
  workerId: string,
  options: ResumeWorkerOptions = {},
): Promise<Worker> {
  return resumeFor(backend, workerId, options, null)
}

/**
 * `resumeWorker` by a fired wake (docs/runtime/wakes.md): as `resumeWorker`,
 * and under the lease the worker must still be in the suspension the wake
 * was registered for (`autoResumeTrigger`), else `WORKER_NOT_SUSPENDED`
 * with `context.stale`. The wake is kept, its siblings cancelled.
 */
export async function resumeWorkerOnWake(
  backend: Backend,
  workerId: string,
  options: ResumeWorkerOptions,
  wake: WakeOfWorker,
): Promise<Worker> {
  return resumeFor(backend, workerId, options, wake)
}

async function resumeFor(
  backend: Backend,
  workerId: string,
  options: ResumeWorkerOptions,
  wake: WakeOfWorker | null,
): Promise<Worker> {
  assertWorkerId(workerId)
  const settings = ownerSettings(options)
  const input = await checkInput(workerId, options)
  const continueTranscript = options.continueTranscript ?? true
  const cause = options.cause ?? null
  const recoverRunning = options.recoverRunning ?? false
  // A cheap look first, so a closed, finished or corrupt worker says so without touching the lease.
  const seen = await loadSnapshot(backend, workerId)
  const early = await notResumable(backend, seen.body, recoverRunning, false)
  if (early !== undefined) throw early
  const owned = await takeLease(backend, workerId, settings.holder, settings.ttlMs, (holder) =>
    concurrentResumeError(workerId, holder),
  )
  const { lease } = owned
  let loaded: LoadedSnapshot
  try {
    // The authoritative read, under the lease: someone may have resumed and parked it meanwhile.
    loaded = await loadSnapshot(backend, workerId)
    const late = await notResumable(backend, loaded.body, recoverRunning, true)
    if (late !== undefined) throw late
    if (wake !== null && loaded.body.suspension?.autoResumeTrigger !== wake.triggerId) {
      throw runtimeError(
        'WORKER_NOT_SUSPENDED',
        `Worker ${workerId} no longer waits for wake ${wake.wakeId}`,
        { workerId, status: loaded.body.status, stale: true },
      )
    }
  } catch (error) {
    await releaseQuietly(backend, lease)
    throw error
  }
  const { body } = loaded
  const suspension = body.suspension
  let run: Run | null | undefined
  const event: LifecycleHookEvent = {
    workerId,
    phase: 'resume',
    reason: suspension?.reason ?? (body.status === 'running' ? 'previous owner lost' : ''),
    initiator: suspension?.initiator ?? 'operator',
    iterationsCompleted: body.iterationsCompleted,
    hasTrigger: suspension?.conditions?.hasTrigger ?? false,
    hasTimeout: suspension?.conditions?.hasTimeout ?? false,
    hasOnEvent: suspension?.conditions?.hasOnEvent ?? false,
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
          audit: auditBy(body.audit, 'pre_resume_denied', lease, settings.clock, {
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
    // A request still pending on a parked worker is a leftover (its run did park). Dropped before
    // the flip: until then a by-id suspend sees the worker parked and stores nothing, so a request
    // made for the new run cannot be lost here. A recovered run keeps its request: it never parked.
    if (body.status === 'suspended') await clearSuspendRequest(backend, workerId)
    const reason = wake === null ? 'worker resumed' : `worker resumed by wake ${wake.wakeId}`
    const settle = await wakesToSettle(backend, body, wake?.wakeId ?? null, reason)
    // Before the flip, under the new lease: a run that cannot be reopened leaves the worker parked.
    run = await reopenRun(backend, body, lease, settings.clock, options.run)
    const resumed = resumedBody(body, lease, settings.clock, { input, continueTranscript, cause })
    const withRun = { ...resumed, audit: runAudit(resumed.audit, body, run, lease, settings.clock) }
    const next =
      settle === null
        ? withRun
        : { ...withRun, audit: wakesCancelledAudit(withRun.audit, settle, lease, settings.clock) }
    const meta = await storeSnapshot(backend, next, lease, { ifMatch: loaded.version })
    // After the flip: a crash before it leaves wakes that the handler finds stale and drops.
    if (settle !== null) await settleQuietly(backend, workerId, settle, settings.clock)
    const worker = new Worker({
      backend,
      body: next,
      version: meta.version,
      owned,
      settings: settings.handle,
      run: run ?? null,
    })
    await runPostHook(settings.hooks, settings.hooks.postResume, event)
    return worker
  } catch (error) {
    await run?.close()
    await releaseQuietly(backend, lease)
    throw error
  }
}

/**
 * The worker's run reopened under `lease` when it owns one and `options`
 * asks for it; `null` for a completed run; `undefined` when not asked.
 */
async function reopenRun(
  backend: Backend,
  body: SnapshotBody,
  lease: Lease,
  clock: Clock,
  options: WorkerRunOptions | undefined,
): Promise<Run | null | undefined> {
  if (body.run === undefined || options === undefined) return undefined
  return openWorkerRun(backend, body.run.runId, lease, clock, options)
}

/** `trail` plus what the resume did with the worker's run, if it was asked to reopen it. */
function runAudit(
  trail: AuditEntry[],
  body: SnapshotBody,
  run: Run | null | undefined,
  lease: Lease,
  clock: Clock,
): AuditEntry[] {
  if (run === undefined || body.run === undefined) return trail
  const { runId } = body.run
  return run === null
    ? auditBy(trail, 'run_not_reopened', lease, clock, { runId, status: 'completed' })
    : auditBy(trail, 'run_reopened', lease, clock, {
        runId,
        attemptId: run.attempt.attemptId,
        attemptCount: run.attemptCount,
      })
}

/** The running body a resume persists: the snapshot, owned by `lease`, with the resume recorded. */
function resumedBody(
  body: SnapshotBody,
  lease: Lease,
  clock: Clock,
  resume: { input: JsonValue; continueTranscript: boolean; cause: string | null },
): SnapshotBody {
  const { input, continueTranscript, cause } = resume
  const recovered = body.status === 'running'
  const now = clock()
  const at = new Date(now).toISOString()
  const reminder: ResumeReminder | null = continueTranscript
    ? {
        kind: 'system_reminder',
        dedupeKey: 'resume_continuity',
        text: continuityText(
          body.suspension?.reason ??
            (recovered ? 'your previous run stopped without suspending' : null),
          body.suspension?.suspendedAt ?? (recovered ? body.updatedAt : null),
          now,
          cause,
        ),
      }
    : null
  // Starting over from the summary must not cost the record of the previous deliberation.
  const archive =
    continueTranscript || body.transcript.length === 0
      ? body.transcriptArchive
      : [...body.transcriptArchive, { archivedAt: at, events: body.transcript }]
  return {
    ...body,
    status: 'running',
    transcript: continueTranscript ? body.transcript : [],
    transcriptArchive: archive,
    suspension: null,
    conditions: null,
    resume: { input, continueTranscript, resumedAt: at, cause, reminder },
    owner: { holder: lease.holder, token: lease.token },
    updatedAt: at,
    audit: auditBy(body.audit, recovered ? 'worker_recovered' : 'worker_resumed', lease, clock, {
      continueTranscript,
      hasInput: input !== null,
      cause,
      ...(recovered ? { previousOwner: body.owner?.holder ?? null } : {}),
    }),
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
