import { type Backend, isAgentStateError, type Lease, type WriterIdentity } from '@agent-state/core'
import { encodeWake, type WakeRecord } from './wake-records.js'

/**
 * The two steps that make a firing exactly-once, kept apart from the
 * dispatcher's loop so each is one reviewable decision (and so the tests can
 * replace each with a broken one and see their checks fail).
 */

/**
 * Takes the wake's firing lease (the lease on its index key), or `null` when
 * another dispatcher or a cancel holds it.
 */
export async function takeWake(
  backend: Backend,
  key: string,
  holder: string,
  ttlMs: number,
): Promise<Lease | null> {
  try {
    return await backend.acquireLease(key, { holder, ttlMs })
  } catch (error) {
    if (isAgentStateError(error) && error.code === 'LEASE_HELD') return null
    throw error
  }
}

/**
 * Writes `next` over the version read under `lease`: a put with `lease` and
 * `ifMatch` together, which the backend checks in one atomic step (the lease
 * is still the key's current, unexpired one; the record is the version read).
 * Returns the new version, or `null` when refused (`LEASE_LOST`: the lease
 * expired or another dispatcher took the key; `PRECONDITION_FAILED`: the
 * record changed since it was read). Used for the firing decision and for
 * every later write of the indexed record.
 */
export async function writeUnderLease(
  backend: Backend,
  key: string,
  next: WakeRecord,
  readVersion: string,
  lease: Lease,
  writer: WriterIdentity,
): Promise<string | null> {
  try {
    return (await backend.put(key, encodeWake(next), { ifMatch: readVersion, lease, writer }))
      .version
  } catch (error) {
    if (
      isAgentStateError(error) &&
      (error.code === 'LEASE_LOST' || error.code === 'PRECONDITION_FAILED')
    ) {
      return null
    }
    throw error
  }
}

/**
 * What a dispatcher does with a wake it holds: `fire` a pending one (the
 * decision), `redeliver` one fired but not delivered (its earlier dispatcher
 * died or its handler failed), `archive` a finished one (cancelled or
 * delivered: only its marker is left to delete, it is never handed out).
 */
export function nextStep(record: WakeRecord): 'fire' | 'redeliver' | 'archive' {
  if (record.state === 'pending') return 'fire'
  if (record.state === 'fired' && record.delivery?.deliveredAt === null) return 'redeliver'
  return 'archive'
}

/**
 * Whether a handler failure ends the wake (`failed`): a non-retryable error
 * on attempt `maxAttempts` or later. A retryable one (`AgentStateError`
 * with `retryable`, for example `CONCURRENT_RESUME`: someone else is on the
 * worker) never does; the wake is delivered again after the lease.
 */
export function givesUp(attempts: number, maxAttempts: number, error: unknown): boolean {
  return attempts >= maxAttempts && !(isAgentStateError(error) && error.retryable)
}
