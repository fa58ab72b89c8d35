import type { Backend, Lease } from '@agent-state/core'

/**
 * Keeps a delivery's lease on the queue's head record for the next delivery
 * (`Delivery.ackAndClaim`) or the same one (`Delivery.heartbeat`, which a
 * daemon's `next()` uses on a kept delivery older than half its visibility
 * timeout): renews it, so the delivery gets the full visibility timeout,
 * and keeps its token. The renewal fails with
 * `LEASE_LOST` unless the lease is still the head record's current one:
 * tokens decide, never holder names, so a consumer whose delivery expired
 * and was claimed again under the same holder name is refused here.
 */
export function keepDeliveryLease(backend: Backend, lease: Lease): Promise<Lease> {
  return backend.renewLease(lease)
}
