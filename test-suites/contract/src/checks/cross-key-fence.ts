import type { Backend, Capabilities, Lease } from '@agent-state/core'
import { isAgentStateError } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, fail, rejectsWith } from '../assert.js'
import { type ContractCheck, check, notApplicable, notClaimed } from '../check.js'

/**
 * `PutOptions.fence`: a write fenced by another key's lease
 * (docs/contract.md, Leases and fencing). The argument rules hold for every
 * backend; the fence itself only where `crossKeyFence` is claimed, and a
 * backend that does not claim it must refuse a fenced write, never store it
 * unfenced.
 */

function crossKeyFenceSkip(caps: Capabilities): string | undefined {
  return caps.crossKeyFence === true ? undefined : notClaimed('crossKeyFence')
}

/** The fence key's lease is exactly `lease` (same token and expiry): a fenced write never touches it. */
async function leaseUnchanged(b: Backend, lease: Lease, what: string): Promise<void> {
  const seen = await b.getLease(lease.key)
  ensureEqual(seen?.token, lease.token, `${what}: the fence key's lease token`)
  ensureEqual(seen?.expiresAt, lease.expiresAt, `${what}: the fence key's lease expiry`)
}

/** Fails unless `key` still holds exactly `value` (`null`: no value). */
async function holds(b: Backend, key: string, value: Uint8Array | null, what: string) {
  const stored = await b.get(key)
  if (value === null) ensureEqual(stored, null, `${what}: nothing stored`)
  else ensureBytes(stored?.value, value, `${what}: the value is unchanged`)
}

/** Rounds of the in-flight check: enough for a write that lands late to show. */
const IN_FLIGHT_ROUNDS = 12
/** Fenced writes in flight per round. */
const IN_FLIGHT_WRITES = 8

/** The checks of the cross-key fence, in report order. */
export const crossKeyFenceChecks: ContractCheck[] = [
  check('leases', 'cross-key fence: arguments are checked on every backend', async (h) => {
    const a = await h.backend()
    const lease = await a.acquireLease('xf/args/owner', { holder: 'owner', ttlMs: h.leaseTtlMs })
    await rejectsWith(
      a.put('xf/args/owner', bytes('x'), { fence: lease }),
      'INVALID_ARGUMENT',
      'a fence on the written key itself (that is `lease`)',
    )
    const own = await a.acquireLease('xf/args/record', { holder: 'owner', ttlMs: h.leaseTtlMs })
    await rejectsWith(
      a.put('xf/args/record', bytes('x'), { fence: lease, lease: own }),
      'INVALID_ARGUMENT',
      'fence and lease together',
    )
    await rejectsWith(
      a.put('xf/args/free', bytes('x'), { fence: { ...lease, token: 0 } }),
      'INVALID_ARGUMENT',
      'a fence with a token below 1',
    )
    await rejectsWith(
      a.put('xf/args/free', bytes('x'), { fence: { ...lease, key: 'bad//key' } }),
      'INVALID_KEY',
      'a fence on an invalid key',
    )
    await holds(a, 'xf/args/owner', null, 'after the refused fences')
    await holds(a, 'xf/args/record', null, 'after the refused fences')
    await holds(a, 'xf/args/free', null, 'after the refused fences')
  }),

  check(
    'leases',
    'cross-key fence: refused with UNSUPPORTED where crossKeyFence is not claimed',
    async (h) => {
      const a = await h.backend()
      const lease = await a.acquireLease('xf/unclaimed/owner', {
        holder: 'owner',
        ttlMs: h.leaseTtlMs,
      })
      await rejectsWith(
        a.put('xf/unclaimed/record', bytes('x'), { fence: lease }),
        'UNSUPPORTED',
        'a fenced write without the claim',
      )
      await holds(a, 'xf/unclaimed/record', null, 'a refused fenced write')
    },
    {
      skip: (caps) =>
        caps.crossKeyFence === true
          ? notApplicable('crossKeyFence is claimed: the fence checks below run instead')
          : undefined,
    },
  ),

  check(
    'leases',
    'cross-key fence: a live fence writes; a released, expired or re-acquired one is LEASE_LOST by token',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      const owner = 'xf/live/owner'
      const first = await a.acquireLease(owner, { holder: 'alice', ttlMs: h.leaseTtlMs })
      const written = await a.put('xf/live/r1', bytes('one'), { fence: first })
      ensureEqual(written.key, 'xf/live/r1', 'the meta of a fenced write names the written key')
      ensureBytes((await b.get('xf/live/r1'))?.value, bytes('one'), 'another instance reads it')
      const created = await a.put('xf/live/r2', bytes('two'), { fence: first, ifNoneMatch: '*' })
      await a.put('xf/live/r2', bytes('three'), { fence: first, ifMatch: created.version })
      ensureBytes((await b.get('xf/live/r2'))?.value, bytes('three'), 'a fenced compare-and-set')
      await leaseUnchanged(b, first, 'after fenced writes')
      ensureEqual(await b.get(owner), null, 'the fence key gets no value')

      // Renewal keeps the token: the renewed lease fences, and so does the object from before.
      const renewed = await a.renewLease(first)
      await a.put('xf/live/r1', bytes('renewed'), { fence: renewed })

      // Released, then taken again by the SAME holder name: the old token is stale.
      ensureEqual(await a.releaseLease(renewed), true, 'release of the fence')
      await rejectsWith(
        a.put('xf/live/r1', bytes('stale'), { fence: renewed }),
        'LEASE_LOST',
        'a released fence',
      )
      const second = await b.acquireLease(owner, { holder: 'alice', ttlMs: h.leaseTtlMs })
      ensure(second.token > first.token, 'a new token for the same holder')
      const lost = await rejectsWith(
        a.put('xf/live/r1', bytes('stale'), { fence: renewed }),
        'LEASE_LOST',
        'a fence superseded by the same holder name',
      )
      // The refusal names both keys, the stale token and the one that superseded it.
      ensureEqual(lost.context.key, 'xf/live/r1', 'LEASE_LOST context.key (the written key)')
      ensureEqual(lost.context.fenceKey, owner, 'LEASE_LOST context.fenceKey')
      ensureEqual(lost.context.token, first.token, 'LEASE_LOST context.token (the stale fence)')
      ensureEqual(lost.context.currentToken, second.token, 'LEASE_LOST context.currentToken')
      await rejectsWith(
        a.put('xf/live/new', bytes('stale'), { fence: renewed, ifNoneMatch: '*' }),
        'LEASE_LOST',
        'a create-if-absent under a superseded fence',
      )
      await holds(b, 'xf/live/r1', bytes('renewed'), 'after the stale fences')
      await holds(b, 'xf/live/new', null, 'after the stale fences')
      await a.put('xf/live/r1', bytes('second'), { fence: second })
      await leaseUnchanged(a, second, 'the new fence after the stale writes')
      await b.releaseLease(second)

      // Expired: refused on the backend's lease clock, with nobody else holding the key; on an
      // injectable clock, live at expiresAt - 1 ms and expired at expiresAt exactly.
      const short = await a.acquireLease(owner, { holder: 'alice', ttlMs: h.shortLeaseTtlMs })
      if (h.capabilities.leaseClock === 'host') h.clock.set(short.expiresAt - 1)
      await a.put('xf/live/r3', bytes('before'), { fence: short })
      if (h.capabilities.leaseClock === 'host') h.clock.set(short.expiresAt)
      else await h.expire(short)
      await rejectsWith(
        a.put('xf/live/r3', bytes('after'), { fence: short }),
        'LEASE_LOST',
        'an expired fence',
      )
      await holds(b, 'xf/live/r3', bytes('before'), 'after the expired fence')

      // A key with no lease at all fences nothing: a lease object for it is stale.
      await rejectsWith(
        a.put('xf/live/r4', bytes('x'), { fence: { ...short, key: 'xf/live/never-leased' } }),
        'LEASE_LOST',
        'a fence on a key that never had a lease',
      )
      await holds(b, 'xf/live/r4', null, 'after a fence on a key that never had a lease')
    },
    { skip: crossKeyFenceSkip },
  ),

  check(
    'leases',
    'cross-key fence: checked before the written key own lease and the precondition',
    async (h) => {
      const a = await h.backend()
      const owner = 'xf/order/owner'
      const stale = await a.acquireLease(owner, { holder: 'alice', ttlMs: h.leaseTtlMs })
      await a.releaseLease(stale)
      const live = await a.acquireLease(owner, { holder: 'alice', ttlMs: h.leaseTtlMs })
      const meta = await a.put('xf/order/r', bytes('v1'), { fence: live })

      await rejectsWith(
        a.put('xf/order/r', bytes('x'), { fence: stale, ifMatch: 'not-a-version-of-it' }),
        'LEASE_LOST',
        'a stale fence with a failing ifMatch',
      )
      await rejectsWith(
        a.put('xf/order/r', bytes('x'), { fence: stale, ifNoneMatch: '*' }),
        'LEASE_LOST',
        'a stale fence with a failing ifNoneMatch',
      )
      const failed = await rejectsWith(
        a.put('xf/order/r', bytes('x'), { fence: live, ifMatch: `${meta.version}x` }),
        'PRECONDITION_FAILED',
        'a live fence with a failing ifMatch',
      )
      ensureEqual(
        (failed.context.current as { version?: string } | null)?.version,
        meta.version,
        'PRECONDITION_FAILED carries the current meta',
      )

      // The written key's own lease still rules it: a fence is not that lease.
      const own = await a.acquireLease('xf/order/r', { holder: 'bob', ttlMs: h.leaseTtlMs })
      await rejectsWith(
        a.put('xf/order/r', bytes('x'), { fence: live }),
        'LEASE_HELD',
        'a live fence on a key with its own live lease',
      )
      await rejectsWith(
        a.put('xf/order/r', bytes('x'), { fence: stale }),
        'LEASE_LOST',
        'a stale fence on a key with its own live lease',
      )
      await holds(a, 'xf/order/r', bytes('v1'), 'after the refused writes')
      await a.releaseLease(own)
      await a.put('xf/order/r', bytes('v2'), { fence: live, ifMatch: meta.version })
      await holds(a, 'xf/order/r', bytes('v2'), 'a live fence with a holding ifMatch')
    },
    { skip: crossKeyFenceSkip },
  ),

  check(
    'leases',
    'cross-key fence: a write in flight when its fence is taken over is ordered before the takeover',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      const owner = 'xf/flight/owner'
      const target = 'xf/flight/record'
      let landed = 0
      let refused = 0
      for (let round = 0; round < IN_FLIGHT_ROUNDS; round++) {
        const lease = await a.acquireLease(owner, { holder: 'writer', ttlMs: h.leaseTtlMs })
        const writes = Array.from({ length: IN_FLIGHT_WRITES }, (_, i) =>
          a.put(target, bytes(`round ${round} write ${i}`), { fence: lease }).then(
            () => true,
            (error: unknown) => {
              if (isAgentStateError(error, 'LEASE_LOST')) return false
              throw error
            },
          ),
        )
        // The takeover races the writes: the old holder releases, another instance acquires
        // (same holder name: tokens decide) and reads at once.
        await a.releaseLease(lease)
        const next = await b.acquireLease(owner, { holder: 'writer', ttlMs: h.leaseTtlMs })
        const seen = await b.get(target)
        const outcomes = await Promise.all(writes)
        landed += outcomes.filter(Boolean).length
        refused += outcomes.filter((ok) => !ok).length
        const after = await b.get(target)
        if (after?.meta.version !== seen?.meta.version) {
          fail(
            `round ${round}: a write fenced by token ${lease.token} changed the key after token ${next.token} took the fence key over (read right after the takeover: ${seen?.meta.version ?? 'none'}, later: ${after?.meta.version ?? 'none'})`,
          )
        }
        await b.releaseLease(next)
      }
      h.report({ rounds: IN_FLIGHT_ROUNDS, writes: IN_FLIGHT_ROUNDS * IN_FLIGHT_WRITES })
      ensureEqual(landed + refused, IN_FLIGHT_ROUNDS * IN_FLIGHT_WRITES, 'every write answered')
    },
    { skip: crossKeyFenceSkip },
  ),
]
