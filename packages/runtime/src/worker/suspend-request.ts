import {
  AgentStateError,
  type Backend,
  type Clock,
  isAgentStateError,
  systemClock,
} from '@agent-state/core'
import { z } from 'zod'
import { runtimeError } from '../shared/errors.js'
import { assertWorkerId } from '../shared/ids.js'
import { workerSuspendRequestKey } from '../shared/layout.js'
import type { ResumeBy } from './resume-by.js'
import {
  parseResumeConditions,
  type ResumeConditions,
  resumeConditionsSchema,
} from './resume-conditions.js'
import type { SnapshotBody } from './snapshot-codec.js'
import { loadSnapshot } from './snapshot-store.js'
import { SUSPEND_INITIATORS, type SuspendInitiator, type Suspension } from './suspension.js'

/** What `worker.suspend` takes. */
export interface SuspendRequest {
  /** Why the worker parks; trimmed, must not be empty. */
  readonly reason: string
  /** Default `self` (`operator` for `suspendWorker`); anything else is `INVALID_INITIATOR`. */
  readonly initiator?: SuspendInitiator
  /** What may wake it; validated (`INVALID_RESUME_CONDITIONS`, `UNSUPPORTED_TIMEOUT_ACTION`). */
  readonly conditions?: unknown
  /** The loop turn index, when known. */
  readonly suspendedAtTurn?: number
  /**
   * Who owns the resume (docs/runtime/workers.md, resume responsibility); default
   * `defaultResumeBy`. Overrides the handle's `resumeBy` option.
   */
  readonly resumeBy?: ResumeBy
}

/** A validated suspend request. */
export interface CheckedSuspendRequest {
  readonly reason: string
  readonly initiator: SuspendInitiator
  readonly conditions: ResumeConditions | null
  readonly suspendedAtTurn: number | null
}

/**
 * Validates a suspend request (each diagnostic its own code, docs/runtime/errors.md).
 *
 * @throws `INVALID_SUSPEND_REASON`, `INVALID_INITIATOR`,
 *   `INVALID_RESUME_CONDITIONS`, `UNSUPPORTED_TIMEOUT_ACTION`, `INVALID_ARGUMENT`.
 */
export function checkSuspendRequest(
  workerId: string,
  request: SuspendRequest,
  defaultInitiator: SuspendInitiator,
): CheckedSuspendRequest {
  const reason = typeof request?.reason === 'string' ? request.reason.trim() : ''
  if (reason === '') {
    throw runtimeError('INVALID_SUSPEND_REASON', 'A suspend reason must be a non-empty string', {
      workerId,
    })
  }
  const initiator = request.initiator ?? defaultInitiator
  if (!SUSPEND_INITIATORS.includes(initiator)) {
    throw runtimeError(
      'INVALID_INITIATOR',
      `Unknown initiator: expected one of ${SUSPEND_INITIATORS.join(', ')}`,
      { workerId, path: 'initiator', supported: [...SUSPEND_INITIATORS] },
    )
  }
  const turn = request.suspendedAtTurn
  if (turn !== undefined && (!Number.isSafeInteger(turn) || turn < 0)) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      'suspendedAtTurn must be a non-negative integer',
      {
        context: { workerId, path: 'suspendedAtTurn' },
      },
    )
  }
  return {
    reason,
    initiator,
    conditions: parseResumeConditions(request.conditions),
    suspendedAtTurn: turn ?? null,
  }
}

/**
 * What the stored state says about a suspend of a worker nobody here owns:
 * its current Suspension when suspended, `null` when running,
 * `WORKER_NOT_RUNNING` (HARN-SUS-001, docs/runtime/errors.md) when done or closed.
 */
export function settledSuspension(body: SnapshotBody, operation: string): Suspension | null {
  if (body.status === 'suspended' && body.suspension !== null) return body.suspension
  if (body.status === 'running') return null
  throw runtimeError(
    'WORKER_NOT_RUNNING',
    `Cannot ${operation} worker ${body.workerId}: it is ${body.status}`,
    { workerId: body.workerId, status: body.status, operation },
  )
}

const pendingSchema = z.strictObject({
  _type: z.literal('agent_state_suspend_request'),
  version: z.literal(1),
  workerId: z.string(),
  reason: z.string().min(1),
  initiator: z.enum(SUSPEND_INITIATORS),
  conditions: resumeConditionsSchema.nullable(),
  suspendedAtTurn: z.int().nonnegative().nullable(),
  requestedBy: z.string().min(1).max(256),
  requestedAt: z.iso.datetime(),
})

/** A suspend a parent or operator asked a running worker for; pass it to `worker.suspend`. */
export interface PendingSuspend {
  readonly reason: string
  readonly initiator: SuspendInitiator
  readonly conditions: ResumeConditions | null
  readonly suspendedAtTurn?: number
  readonly requestedBy: string
  /** RFC 3339. */
  readonly requestedAt: string
}

function decodePending(bytes: Uint8Array, workerId: string): PendingSuspend {
  let parsed: ReturnType<typeof pendingSchema.safeParse> | undefined
  try {
    parsed = pendingSchema.safeParse(
      JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)),
    )
  } catch {
    parsed = undefined
  }
  if (parsed?.success !== true || parsed.data.workerId !== workerId) {
    throw new AgentStateError(
      'CORRUPT',
      `The pending suspend request of worker ${workerId} is corrupt`,
      { context: { workerId, key: workerSuspendRequestKey(workerId) } },
    )
  }
  const { reason, initiator, conditions, suspendedAtTurn, requestedBy, requestedAt } = parsed.data
  return {
    reason,
    initiator,
    conditions,
    ...(suspendedAtTurn === null ? {} : { suspendedAtTurn }),
    requestedBy,
    requestedAt,
  }
}

/** The pending by-id suspend request of a worker, or `null`. @throws `CORRUPT`. */
export async function readSuspendRequest(
  backend: Backend,
  workerId: string,
): Promise<PendingSuspend | null> {
  const found = await backend.get(workerSuspendRequestKey(workerId))
  return found === null ? null : decodePending(found.value, workerId)
}

/** Drops the pending request once the worker parked; best effort (a stale one is harmless). */
export async function clearSuspendRequest(backend: Backend, workerId: string): Promise<void> {
  try {
    await backend.delete(workerSuspendRequestKey(workerId))
  } catch {
    // A leftover request only asks an already-parked worker to park: suspend is idempotent.
  }
}

/** The result of {@link suspendWorker}. */
export type SuspendOutcome =
  /** The worker is parked: its current Suspension, unchanged. */
  | { readonly status: 'suspended'; readonly suspension: Suspension }
  /** The worker runs: the request is stored for its owner to honour at the next turn boundary. */
  | { readonly status: 'requested'; readonly request: PendingSuspend }

/** Options of {@link suspendWorker}. */
export interface SuspendWorkerOptions {
  /** Who asks (recorded with the request). Default `operator`. 1 to 256 characters. */
  readonly requestedBy?: string
  /** Default `Date.now`. */
  readonly clock?: Clock
}

/**
 * Suspends a worker by id, as a parent or an operator (docs/runtime/workers.md),
 * whoever owns it. The stored state decides:
 * - suspended: resolves its current Suspension unchanged; nothing is written,
 *   no hook runs, no event is emitted (idempotent for every caller);
 * - done or closed: `WORKER_NOT_RUNNING` (HARN-SUS-001);
 * - running: suspend is cooperative, so the request is stored (validated
 *   first) and the owner honours it at its next turn boundary
 *   (`worker.suspendRequested()` → `worker.suspend(request)`). A second
 *   request while one is pending resolves the first one unchanged.
 *
 * @throws `INVALID_WORKER_ID`, `SNAPSHOT_*`, `WORKER_NOT_RUNNING`, and the
 *   request's validation codes (see `worker.suspend`).
 */
export async function suspendWorker(
  backend: Backend,
  workerId: string,
  request: SuspendRequest,
  options: SuspendWorkerOptions = {},
): Promise<SuspendOutcome> {
  assertWorkerId(workerId)
  const requestedBy = options.requestedBy ?? 'operator'
  if (typeof requestedBy !== 'string' || requestedBy === '' || requestedBy.length > 256) {
    throw new AgentStateError('INVALID_ARGUMENT', 'requestedBy must be 1 to 256 characters')
  }
  const { body } = await loadSnapshot(backend, workerId)
  const settled = settledSuspension(body, 'suspend')
  if (settled !== null) return { status: 'suspended', suspension: settled }
  const checked = checkSuspendRequest(workerId, request, 'operator')
  const record = {
    _type: 'agent_state_suspend_request',
    version: 1,
    workerId,
    ...checked,
    requestedBy,
    requestedAt: new Date((options.clock ?? systemClock)()).toISOString(),
  }
  const key = workerSuspendRequestKey(workerId)
  try {
    await backend.put(key, new TextEncoder().encode(JSON.stringify(record)), {
      ifNoneMatch: '*',
      writer: { writerId: requestedBy, workerId },
    })
  } catch (error) {
    if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    const pending = await readSuspendRequest(backend, workerId)
    if (pending !== null) return { status: 'requested', request: pending }
    // Consumed between our put and our read: the worker just parked, so ask the storage again.
    return suspendWorker(backend, workerId, request, options)
  }
  return {
    status: 'requested',
    request: decodePending(new TextEncoder().encode(JSON.stringify(record)), workerId),
  }
}
