import type { Backend, Clock, Lease } from '@agent-state/core'
import { readWorkerWakes, settleWorkerWakes } from '../wake/worker-wakes.js'
import type { AuditEntry } from './audit.js'
import type { SnapshotBody } from './snapshot-codec.js'
import { auditBy } from './worker-ownership.js'

/**
 * How a resume or close ends a suspension's wakes (docs/runtime/wakes.md,
 * Resume conditions): the plan is read under the worker's lease before the
 * state flips and audited in that same write (`wakes_cancelled`); the
 * cancels run after the flip landed.
 */

/** The fired wake a transition is made for: its id and the suspension it was registered for. */
export interface WakeOfWorker {
  readonly wakeId: string
  readonly triggerId: string
}

/** The wakes a transition out of a suspension cancels. */
export interface SettlePlan {
  readonly triggerId: string
  /** The wake that fired (kept), or `null` for a transition by hand. */
  readonly keep: string | null
  /** Every other wake of the suspension registered at suspend. */
  readonly cancel: readonly string[]
  /** The topic waiter removed, or `null`. */
  readonly topic: string | null
  readonly reason: string
}

/** The plan for leaving `body`'s suspension, or `null` when it registered no wakes. */
export async function wakesToSettle(
  backend: Backend,
  body: SnapshotBody,
  keep: string | null,
  reason: string,
): Promise<SettlePlan | null> {
  const triggerId = body.status === 'suspended' ? body.suspension?.autoResumeTrigger : null
  if (triggerId === null || triggerId === undefined) return null
  const registration = await readWorkerWakes(backend, body.workerId)
  if (registration === null || registration.triggerId !== triggerId) return null
  return {
    triggerId,
    keep,
    cancel: registration.wakeIds.filter((id) => id !== keep),
    topic: registration.topic,
    reason,
  }
}

/** `trail` plus the `wakes_cancelled` entry of `plan` (none when it cancels nothing). */
export function wakesCancelledAudit(
  trail: readonly AuditEntry[],
  plan: SettlePlan,
  lease: Lease,
  clock: Clock,
): AuditEntry[] {
  if (plan.cancel.length === 0 && plan.topic === null) return [...trail]
  return auditBy(trail, 'wakes_cancelled', lease, clock, {
    triggerId: plan.triggerId,
    firedWake: plan.keep,
    cancelled: [...plan.cancel],
    topic: plan.topic,
    reason: plan.reason,
  })
}

/**
 * Runs `plan` after the transition landed. Never fails the transition: a
 * wake it could not cancel (a backend error, a dispatcher holding it) fires
 * later and its handler, finding the worker out of that suspension, drops it.
 */
export async function settleQuietly(
  backend: Backend,
  workerId: string,
  plan: SettlePlan,
  clock: Clock,
): Promise<void> {
  try {
    await settleWorkerWakes(backend, workerId, plan.triggerId, {
      keep: plan.keep,
      reason: plan.reason,
      clock,
    })
  } catch {
    // See above: the stale wakes are dropped by the handler.
  }
}
