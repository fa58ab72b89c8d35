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
import type { JsonValue } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { uuidv7 } from '../shared/ids.js'
import { workerSnapshotKey } from '../shared/layout.js'
import { acquireOwned, type OwnedLease } from '../shared/owned-lease.js'
import { type AuditEntry, appendAudit } from './audit.js'
import type { LifecycleHooks } from './hooks.js'
import type { CloudSession, ResumeBy, TriggerDispatcher } from './resume-by.js'
import type { WorkerSettings } from './worker.js'
import type { WorkerEvents } from './worker-events.js'

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
  /** Receives `WorkerSuspended` / `WorkerCompleted` for the transitions this handle persists. */
  readonly events?: WorkerEvents
  /** The resume owner of this handle's suspends (default `defaultResumeBy`). */
  readonly resumeBy?: ResumeBy
  /** The in-process trigger dispatcher `ResumeBy.localRuntime` registers conditions with. */
  readonly triggers?: TriggerDispatcher
  /** A bound cloud session for `ResumeBy.cloudHarness`. */
  readonly cloudSession?: CloudSession
}

function defaultHolder(): string {
  return `${hostname()}:${process.pid}:${uuidv7().slice(-12)}`
}

/** The validated owner settings: holder, TTL and the handle's {@link WorkerSettings}. */
export function ownerSettings(options: WorkerOwnerOptions) {
  const ttlMs = options.leaseTtlMs ?? DEFAULT_WORKER_LEASE_TTL_MS
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_TTL_MS) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `leaseTtlMs must be an integer from 1 to ${MAX_LEASE_TTL_MS}`,
    )
  }
  const clock = options.clock ?? systemClock
  const handle: WorkerSettings = {
    hooks: options.hooks ?? {},
    clock,
    ...(options.events === undefined ? {} : { events: options.events }),
    ...(options.resumeBy === undefined ? {} : { resumeBy: options.resumeBy }),
    ...(options.triggers === undefined ? {} : { triggers: options.triggers }),
    ...(options.cloudSession === undefined ? {} : { cloudSession: options.cloudSession }),
  }
  return { holder: options.holder ?? defaultHolder(), ttlMs, clock, hooks: handle.hooks, handle }
}

/** `trail` plus one entry made by the lease holder. */
export function auditBy(
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
 * The one `CONCURRENT_RESUME` (HARN-SUS-006, docs/runtime/errors.md): another owner holds the
 * worker. Retryable: once that owner parks the worker again, a resume can win.
 */
export function concurrentResumeError(workerId: string, holder: unknown): AgentStateError {
  return runtimeError(
    'CONCURRENT_RESUME',
    `Worker ${workerId} is being resumed or run by ${String(holder)}`,
    { workerId, holder },
  )
}

/**
 * Takes a worker's lease. `LEASE_HELD` becomes `onHeld`'s error, so the
 * loser of a race learns why in the runtime's terms.
 */
export async function takeLease(
  backend: Backend,
  workerId: string,
  holder: string,
  ttlMs: number,
  onHeld: (holder: unknown) => AgentStateError,
): Promise<OwnedLease> {
  try {
    return await acquireOwned(backend, workerSnapshotKey(workerId), holder, ttlMs)
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_HELD')) throw onHeld(error.context.holder)
    throw error
  }
}
