import { AgentStateError, type Backend, isAgentStateError } from '@agent-state/core'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { assertWorkerId, uuidv7 } from '../shared/ids.js'
import { releaseQuietly } from '../shared/owned-lease.js'
import type { SnapshotBody } from './snapshot-codec.js'
import { loadSnapshot, storeSnapshot } from './snapshot-store.js'
import { Worker } from './worker.js'
import {
  auditBy,
  concurrentResumeError,
  ownerSettings,
  takeLease,
  type WorkerOwnerOptions,
} from './worker-ownership.js'
import {
  settleQuietly,
  type WakeOfWorker,
  wakesCancelledAudit,
  wakesToSettle,
} from './worker-wake-settle.js'

/** Options of {@link startWorker}. */
export interface StartWorkerOptions extends WorkerOwnerOptions {
  /** Default a fresh UUIDv7. */
  readonly workerId?: string
  readonly state?: JsonValue
  readonly transcript?: readonly JsonValue[]
  readonly summary?: string | null
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
  const owned = await takeLease(backend, workerId, settings.holder, settings.ttlMs, exists)
  const { lease } = owned
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
    conditions: null,
    transcriptArchive: [],
    resume: null,
    owner: { holder: lease.holder, token: lease.token },
    createdAt: now,
    updatedAt: now,
    audit: auditBy([], 'worker_started', lease, settings.clock, {}),
  }
  try {
    const meta = await storeSnapshot(backend, body, lease, { ifNoneMatch: '*' })
    return new Worker({ backend, body, version: meta.version, owned, settings: settings.handle })
  } catch (error) {
    await releaseQuietly(backend, lease)
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) throw exists()
    throw error
  }
}

function closeError(snapshot: SnapshotBody): AgentStateError | undefined {
  const { workerId, status } = snapshot
  if (status === 'suspended') return undefined
  return runtimeError('WORKER_NOT_SUSPENDED', `Cannot close worker ${workerId}: it is ${status}`, {
    workerId,
    status,
  })
}

/**
 * Rejects a suspended worker's snapshot for good (`suspended → closed`);
 * later resumes fail with `WORKER_CLOSED`. Idempotent on a closed worker.
 * A snapshot that cannot be read is not closed (`SNAPSHOT_*`): retire it
 * with `quarantineWorkerSnapshot`.
 *
 * @throws `WORKER_NOT_SUSPENDED` (running or done), `CONCURRENT_RESUME`
 *   (someone holds the lease), `SNAPSHOT_*`.
 */
export async function closeWorker(
  backend: Backend,
  workerId: string,
  options: Pick<WorkerOwnerOptions, 'holder' | 'clock'> = {},
): Promise<void> {
  await closeFor(backend, workerId, options, null)
}

/**
 * The `fail` action of a fired timeout (docs/runtime/wakes.md): closes the
 * worker with a `timed_out` audit entry, if it is still in the suspension the
 * wake was registered for. Returns whether it closed it (`false`: the worker
 * left that suspension meanwhile, the wake is stale).
 */
export async function timeOutWorker(
  backend: Backend,
  workerId: string,
  options: Pick<WorkerOwnerOptions, 'holder' | 'clock'>,
  wake: WakeOfWorker & { readonly durationMinutes: number },
): Promise<boolean> {
  return closeFor(backend, workerId, options, wake)
}

async function closeFor(
  backend: Backend,
  workerId: string,
  options: Pick<WorkerOwnerOptions, 'holder' | 'clock'>,
  timedOut: (WakeOfWorker & { readonly durationMinutes: number }) | null,
): Promise<boolean> {
  assertWorkerId(workerId)
  const settings = ownerSettings(options)
  const stale = (body: SnapshotBody) =>
    timedOut !== null &&
    (body.status !== 'suspended' || body.suspension?.autoResumeTrigger !== timedOut.triggerId)
  const seen = await loadSnapshot(backend, workerId)
  if (stale(seen.body)) return false
  if (seen.body.status === 'closed') return false
  const early = closeError(seen.body)
  if (early !== undefined) throw early
  const { lease } = await takeLease(backend, workerId, settings.holder, 60_000, (holder) =>
    concurrentResumeError(workerId, holder),
  )
  try {
    const loaded = await loadSnapshot(backend, workerId)
    if (stale(loaded.body)) return false
    if (loaded.body.status === 'closed') return false
    const late = closeError(loaded.body)
    if (late !== undefined) throw late
    const reason =
      timedOut === null ? 'worker closed' : `worker timed out by wake ${timedOut.wakeId}`
    const settle = await wakesToSettle(backend, loaded.body, timedOut?.wakeId ?? null, reason)
    let audit =
      timedOut === null
        ? auditBy(loaded.body.audit, 'worker_closed', lease, settings.clock, {})
        : auditBy(loaded.body.audit, 'timed_out', lease, settings.clock, {
            wakeId: timedOut.wakeId,
            durationMinutes: timedOut.durationMinutes,
          })
    if (settle !== null) audit = wakesCancelledAudit(audit, settle, lease, settings.clock)
    await storeSnapshot(
      backend,
      {
        ...loaded.body,
        status: 'closed',
        updatedAt: new Date(settings.clock()).toISOString(),
        audit,
      },
      lease,
      { ifMatch: loaded.version },
    )
    if (settle !== null) await settleQuietly(backend, workerId, settle, settings.clock)
    return true
  } finally {
    await releaseQuietly(backend, lease)
  }
}

/**
 * Records in a worker's audit trail that one of its wakes was given up
 * (`wake_failed` with `detail`: the wake id, cause, attempts and the last
 * error's code), under the worker's lease, leaving its state as it is: the
 * worker stays parked for an operator to resume or close by hand. Returns
 * `false` when the worker has no readable snapshot (nothing to audit).
 *
 * @throws `CONCURRENT_RESUME` (someone holds the lease: try again later).
 */
export async function auditWakeFailure(
  backend: Backend,
  workerId: string,
  options: Pick<WorkerOwnerOptions, 'holder' | 'clock'>,
  detail: Readonly<Record<string, JsonValue>>,
): Promise<boolean> {
  assertWorkerId(workerId)
  const settings = ownerSettings(options)
  const { lease } = await takeLease(backend, workerId, settings.holder, 60_000, (holder) =>
    concurrentResumeError(workerId, holder),
  )
  try {
    let loaded: Awaited<ReturnType<typeof loadSnapshot>>
    try {
      loaded = await loadSnapshot(backend, workerId)
    } catch (error) {
      if (isAgentStateError(error) && error.code.startsWith('SNAPSHOT_')) return false
      throw error
    }
    await storeSnapshot(
      backend,
      {
        ...loaded.body,
        updatedAt: new Date(settings.clock()).toISOString(),
        audit: auditBy(loaded.body.audit, 'wake_failed', lease, settings.clock, { ...detail }),
      },
      lease,
      { ifMatch: loaded.version },
    )
    return true
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
