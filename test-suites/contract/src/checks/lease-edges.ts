import type { Backend, Lease } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, rejectsWith } from '../assert.js'
import { type ContractCheck, check, notApplicable } from '../check.js'
import type { Harness } from '../harness.js'
import { listAll } from './list-all.js'

/**
 * Every way the old lease of a holder can be used after the SAME holder took
 * the key again: each must be refused by token, never accepted because the
 * holder's name matches. The value and the new lease must be untouched.
 */
async function oldLeaseRefused(
  h: Harness,
  a: Backend,
  key: string,
  old: Lease,
  current: Lease,
  value: Uint8Array,
  how: string,
): Promise<void> {
  ensureEqual(current.holder, old.holder, `${how}: the same holder name`)
  ensure(current.token > old.token, `${how}: token ${current.token} > ${old.token}`)
  const version = (await a.head(key))?.version
  await rejectsWith(a.put(key, bytes('old'), { lease: old }), 'LEASE_LOST', `${how}: fenced put`)
  if (version !== undefined) {
    await rejectsWith(
      a.put(key, bytes('old'), { lease: old, ifMatch: version }),
      'LEASE_LOST',
      `${how}: fenced compare-and-set`,
    )
  }
  await rejectsWith(a.delete(key, { lease: old }), 'LEASE_LOST', `${how}: fenced delete`)
  await rejectsWith(a.renewLease(old), 'LEASE_LOST', `${how}: renew`)
  ensureEqual(await a.releaseLease(old), false, `${how}: release of the old lease`)
  const other = await h.backend()
  const seen = await other.getLease(key)
  ensureEqual(seen?.token, current.token, `${how}: the new lease survives the old one`)
  ensureBytes((await other.get(key))?.value, value, `${how}: nothing stored by the old lease`)
  await rejectsWith(
    other.put(key, bytes('intruder')),
    'LEASE_HELD',
    `${how}: the new lease still fences`,
  )
  const renewed = await a.renewLease(current)
  ensureEqual(renewed.token, current.token, `${how}: the new lease renews`)
  await a.put(key, value, { lease: current })
  ensureEqual(await a.releaseLease(current), true, `${how}: release of the new lease`)
}

/** Lease identity by token, expiry at the exact millisecond, and the stale-release answer. */
export const leaseEdgeChecks: ContractCheck[] = [
  check(
    'leases',
    'a holder that re-acquires fences out its own earlier lease by token',
    async (h) => {
      const a = await h.backend()
      const value = bytes('kept')
      await a.put('same/rel', value)
      const first = await a.acquireLease('same/rel', { holder: 'alice', ttlMs: h.leaseTtlMs })
      ensureEqual(await a.releaseLease(first), true, 'release of the first lease')
      const second = await a.acquireLease('same/rel', { holder: 'alice', ttlMs: h.leaseTtlMs })
      await oldLeaseRefused(h, a, 'same/rel', first, second, value, 'after release')

      await a.put('same/exp', value)
      const short = await a.acquireLease('same/exp', { holder: 'bob', ttlMs: h.shortLeaseTtlMs })
      await h.expire(short)
      const again = await h.acquireAfterExpiry(a, 'same/exp', 'bob', h.leaseTtlMs)
      await oldLeaseRefused(h, a, 'same/exp', short, again, value, 'after expiry')

      // A key with no value: the same holder's old lease must not create one.
      const l1 = await a.acquireLease('same/none', { holder: 'carol', ttlMs: h.leaseTtlMs })
      await a.releaseLease(l1)
      const l2 = await a.acquireLease('same/none', { holder: 'carol', ttlMs: h.leaseTtlMs })
      await rejectsWith(
        a.put('same/none', bytes('x'), { lease: l1, ifNoneMatch: '*' }),
        'LEASE_LOST',
        'create-if-absent with the old lease',
      )
      ensureEqual(await a.get('same/none'), null, 'nothing created by the old lease')
      ensureEqual(await a.releaseLease(l1), false, 'release of the old lease of an empty key')
      ensureEqual((await a.getLease('same/none'))?.token, l2.token, 'the new lease survives')
      // Leases (and fencing counters of keys without a value) are internal: never listed.
      ensureSame(await listAll(a, { prefix: 'same/' }), ['same/exp', 'same/rel'], 'listing')
    },
  ),

  check('leases', 'a stale release resolves false and never throws', async (h) => {
    const a = await h.backend()
    const b = await h.backend()
    const released = await a.acquireLease('stale/rel', { holder: 'x', ttlMs: h.leaseTtlMs })
    await a.releaseLease(released)
    ensureEqual(await a.releaseLease(released), false, 'release of a released lease')
    // Expired but never superseded: still the key's current lease, so release removes it.
    const expired = await a.acquireLease('stale/exp', { holder: 'x', ttlMs: h.shortLeaseTtlMs })
    await h.expire(expired)
    ensureEqual(await a.releaseLease(expired), true, 'release of an expired, unsuperseded lease')
    ensureEqual(await a.releaseLease(expired), false, 'second release of the expired lease')
    const old = await a.acquireLease('stale/sup', { holder: 'x', ttlMs: h.shortLeaseTtlMs })
    await h.expire(old)
    const superseded = await h.acquireAfterExpiry(a, 'stale/sup', 'y', h.shortLeaseTtlMs)
    await h.expire(superseded)
    const newest = await h.acquireAfterExpiry(b, 'stale/sup', 'z', h.leaseTtlMs)
    ensureEqual(await a.releaseLease(old), false, 'release of a twice-superseded lease')
    ensureEqual(await a.releaseLease(superseded), false, 'release of a superseded lease')
    ensureEqual((await b.getLease('stale/sup'))?.token, newest.token, 'the newest lease stays')
    // A key that never had a lease (a forged, well-formed lease): false as well.
    const forged: Lease = { ...released, key: 'stale/never', token: 1_000_000 }
    ensureEqual(await a.releaseLease(forged), false, 'release on a key that never had a lease')
  }),

  check(
    'leases',
    'on the injected host clock a lease is live until expiresAt and expired at it',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      const ttlMs = 1000
      h.clock.advance(17)
      const start = h.clock.now()
      const lease = await a.acquireLease('gran', { holder: 'alice', ttlMs })
      ensureEqual(lease.expiresAt, start + ttlMs, 'expiresAt is now + ttlMs on the host clock')
      h.clock.set(lease.expiresAt - 1)
      ensureEqual((await b.getLease('gran'))?.token, lease.token, 'live at expiresAt - 1 ms')
      await rejectsWith(b.put('gran', bytes('x')), 'LEASE_HELD', 'unfenced put at expiresAt - 1')
      await rejectsWith(
        b.acquireLease('gran', { holder: 'bob', ttlMs }),
        'LEASE_HELD',
        'acquire at expiresAt - 1',
      )
      await a.put('gran', bytes('in time'), { lease })
      h.clock.set(lease.expiresAt)
      ensureEqual(await b.getLease('gran'), null, 'expired at exactly expiresAt')
      await rejectsWith(
        a.put('gran', bytes('late'), { lease }),
        'LEASE_LOST',
        'fenced put at expiresAt',
      )
      await rejectsWith(a.renewLease(lease), 'LEASE_LOST', 'renew at expiresAt')
      ensureBytes((await b.get('gran'))?.value, bytes('in time'), 'nothing stored when late')
      const next = await b.acquireLease('gran', { holder: 'bob', ttlMs })
      ensure(next.token > lease.token, 'a new token at expiresAt')

      const r = await a.acquireLease('gran/renew', { holder: 'alice', ttlMs })
      h.clock.set(r.expiresAt - 1)
      const renewed = await a.renewLease(r)
      ensureEqual(renewed.expiresAt, r.expiresAt - 1 + ttlMs, 'renew at expiresAt - 1 ms')
      h.clock.set(renewed.expiresAt - 1)
      await a.put('gran/renew', bytes('renewed'), { lease: renewed })
      h.clock.set(renewed.expiresAt)
      await rejectsWith(
        a.put('gran/renew', bytes('late'), { lease: renewed }),
        'LEASE_LOST',
        'fenced put at the renewed expiresAt',
      )
    },
    {
      skip: (caps) =>
        caps.leaseClock === 'host'
          ? undefined
          : notApplicable(
              `leaseClock ${caps.leaseClock} is not injectable: expiry is tested on real time`,
            ),
    },
  ),

  check('errors', 'CLOSED and INVALID_KEY on renewLease and releaseLease', async (h) => {
    const a = await h.backend()
    const lease = await a.acquireLease('lk', { holder: 'h', ttlMs: h.leaseTtlMs })
    for (const [label, key] of [
      ['empty', ''],
      ['trailing dot-dot', 'a/..'],
      ['trailing dot', 'a/.'],
      ['leading slash', '/lk'],
      ['control character', 'l\u0001k'],
    ] as const) {
      const bad = { ...lease, key }
      await rejectsWith(a.renewLease(bad), 'INVALID_KEY', `renewLease of a ${label} key`)
      await rejectsWith(a.releaseLease(bad), 'INVALID_KEY', `releaseLease of a ${label} key`)
    }
    ensureEqual((await a.getLease('lk'))?.token, lease.token, 'the lease is untouched')
    // Opened before the close: a non-durable store may vanish with its last instance.
    const other = await h.backend()
    await a.close()
    await rejectsWith(a.renewLease(lease), 'CLOSED', 'renewLease after close')
    await rejectsWith(a.releaseLease(lease), 'CLOSED', 'releaseLease after close')
    ensureEqual((await other.getLease('lk'))?.token, lease.token, 'close released nothing')
  }),
]
