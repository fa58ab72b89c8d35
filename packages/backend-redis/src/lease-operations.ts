import {
  type AcquireLeaseOptions,
  AgentStateError,
  assertLeaseShape,
  assertValidKey,
  checkAcquire,
  type Lease,
  randomSuffix,
} from '@agent-state/core'
import { ACQUIRE, GET_LEASE, RELEASE, RENEW } from './lua-scripts.js'
import type { OperationContext } from './operation-context.js'
import { leaseIdOf, named, REPLY, reply, throwWriteFailure, toNumber } from './script-replies.js'

/** The lease half of the Backend contract: each call is one Lua script on the server's clock. */
export interface LeaseOperations {
  acquireLease(key: string, options: AcquireLeaseOptions): Promise<Lease>
  renewLease(lease: Lease): Promise<Lease>
  releaseLease(lease: Lease): Promise<boolean>
  getLease(key: string): Promise<Lease | null>
}

/**
 * The promotion hold of one backend instance (see ACQUIRE in
 * `lua-scripts.ts`): whether it is `on`, the configured least hold `holdMs`
 * (0 when neither `maxLeaseTtlMs` nor `promotionHoldMs` is set: the hold is
 * then the longest TTL recorded on the promoted node), and the longest TTL it
 * grants (core's 24 h unless `maxLeaseTtlMs`). Off under `replication`: every
 * grant and renewal is then on the replicas before it is acknowledged.
 */
export interface PromotionHold {
  readonly on: boolean
  readonly holdMs: number
  readonly maxLeaseTtlMs: number
}

/**
 * Checks a grant's arguments as acquireLease does (the native queue's claim
 * grants too) and returns the promotion hold's script arguments.
 */
export function checkGrant(
  ctx: OperationContext,
  hold: PromotionHold,
  key: string,
  leaseOptions: AcquireLeaseOptions,
): [string, string] {
  checkAcquire(key, leaseOptions, ctx.capabilities.maxKeyBytes)
  if (hold.on && leaseOptions.ttlMs > hold.maxLeaseTtlMs) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `ttlMs ${leaseOptions.ttlMs} is above this Redis backend's maxLeaseTtlMs (${hold.maxLeaseTtlMs}), the bound its promotion hold waits out`,
      { context: { key, ttlMs: leaseOptions.ttlMs, maxLeaseTtlMs: hold.maxLeaseTtlMs } },
    )
  }
  return [hold.on ? '1' : '0', String(hold.holdMs)]
}

/** The lease operations of one backend instance. */
export function leaseOperations(ctx: OperationContext, hold: PromotionHold): LeaseOperations {
  const { layout, capabilities } = ctx
  return {
    async acquireLease(key, leaseOptions) {
      ctx.assertOpen()
      const holdArgs = checkGrant(ctx, hold, key, leaseOptions)
      const r = reply(
        await ctx.mutate(
          ACQUIRE,
          'acquireLease',
          key,
          [layout.record(key), layout.records, layout.meta],
          [
            key,
            leaseOptions.holder,
            String(leaseOptions.ttlMs),
            randomSuffix() + randomSuffix(),
            ...holdArgs,
          ],
        ),
        key,
      )
      if (r[0] !== 'OK') throwWriteFailure(key, r, undefined)
      const f = named(key, r, REPLY.acquire)
      return {
        key,
        holder: leaseOptions.holder,
        token: toNumber(key, f.token, 'lt'),
        ttlMs: leaseOptions.ttlMs,
        expiresAt: toNumber(key, f.expiresAt, 'le'),
        leaseId: f.leaseId,
      }
    },

    async renewLease(lease) {
      ctx.assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, capabilities.maxKeyBytes)
      const r = reply(
        await ctx.mutate(
          RENEW,
          'renewLease',
          lease.key,
          [layout.record(lease.key), layout.meta],
          [String(lease.token), leaseIdOf(lease)],
        ),
        lease.key,
      )
      if (r[0] !== 'OK') throwWriteFailure(lease.key, r, lease)
      const f = named(lease.key, r, REPLY.renew)
      const renewed: Lease = {
        key: lease.key,
        holder: f.holder,
        token: lease.token,
        ttlMs: toNumber(lease.key, f.ttlMs, 'lttl'),
        expiresAt: toNumber(lease.key, f.expiresAt, 'le'),
      }
      return typeof lease.leaseId === 'string' ? { ...renewed, leaseId: lease.leaseId } : renewed
    },

    async releaseLease(lease) {
      ctx.assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, capabilities.maxKeyBytes)
      const released = await ctx.mutate(
        RELEASE,
        'releaseLease',
        lease.key,
        [layout.record(lease.key)],
        [String(lease.token), leaseIdOf(lease)],
      )
      return released === 1
    },

    async getLease(key) {
      assertValidKey(key, capabilities.maxKeyBytes)
      const r = await ctx.read(GET_LEASE, 'getLease', key, [layout.record(key)], [])
      if (r[0] === 'NONE') return null
      const f = named(key, r, REPLY.getLease)
      return {
        key,
        holder: f.holder,
        token: toNumber(key, f.token, 'lt'),
        ttlMs: toNumber(key, f.ttlMs, 'lttl'),
        expiresAt: toNumber(key, f.expiresAt, 'le'),
      }
    },
  }
}
