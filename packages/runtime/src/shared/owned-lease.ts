import { performance } from 'node:perf_hooks'
import type { Backend, Lease } from '@agent-state/core'

/**
 * A lease with the local monotonic time at which it was requested. The
 * lease's `expiresAt` is on the backend's lease clock (Redis server time,
 * the host clock of the process that checked it, or an observer's estimate),
 * which the local wall clock cannot be compared with. Its age, though, is an
 * interval: measured locally from just before the grant was asked for, it
 * can only overestimate the age on any clock running at the same rate, so a
 * renewal due by this measure is never late.
 */
export interface OwnedLease {
  readonly lease: Lease
  /** `performance.now()` just before the acquire or renew request was sent. */
  readonly requestedAt: number
}

/** Acquires `key`'s lease, timing it for {@link leaseAge}. */
export async function acquireOwned(
  backend: Backend,
  key: string,
  holder: string,
  ttlMs: number,
): Promise<OwnedLease> {
  const requestedAt = performance.now()
  return { lease: await backend.acquireLease(key, { holder, ttlMs }), requestedAt }
}

/** Renews the lease, timing the renewal. Throws `LEASE_LOST` once superseded or expired. */
export async function renewOwned(backend: Backend, owned: OwnedLease): Promise<OwnedLease> {
  const requestedAt = performance.now()
  return { lease: await backend.renewLease(owned.lease), requestedAt }
}

/** Milliseconds since the lease was requested, on the local monotonic clock. */
export function leaseAge(owned: OwnedLease): number {
  return performance.now() - owned.requestedAt
}

/**
 * What a write should do with the lease first: renew it once half the TTL
 * has passed; past the whole TTL it is gone on every clock, so renewing is
 * pointless and the write goes out as is, to be refused by the backend's
 * fence (`LEASE_LOST`) in the same atomic step as the write.
 */
export function renewalDue(owned: OwnedLease): 'none' | 'renew' | 'expired' {
  const age = leaseAge(owned)
  if (age >= owned.lease.ttlMs) return 'expired'
  return age >= owned.lease.ttlMs / 2 ? 'renew' : 'none'
}

/** Releases a lease, ignoring failures: an unreleased lease only delays the next owner until it expires. */
export async function releaseQuietly(backend: Backend, lease: Lease): Promise<void> {
  try {
    await backend.releaseLease(lease)
  } catch {
    // The lease expires on its own; the state written before this call is what counts.
  }
}
