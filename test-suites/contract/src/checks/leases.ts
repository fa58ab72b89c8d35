import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, rejectsWith } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import { listAll } from './list-all.js'

/** Leases and fencing (DESIGN §2). */
export const leaseChecks: ContractCheck[] = [
  check('leases', 'acquire getLease and LEASE_HELD with the holder', async (h) => {
    const a = await h.backend()
    const b = await h.backend()
    ensureEqual(await a.getLease('l'), null, 'no lease before acquiring')
    const lease = await a.acquireLease('l', { holder: 'alice', ttlMs: h.leaseTtlMs })
    ensureEqual(lease.key, 'l', 'lease.key')
    ensureEqual(lease.holder, 'alice', 'lease.holder')
    ensureEqual(lease.ttlMs, h.leaseTtlMs, 'lease.ttlMs')
    ensure(Number.isSafeInteger(lease.token) && lease.token >= 1, 'token is a positive integer')
    ensure(
      lease.expiresAt > Date.now() - 60_000 || h.capabilities.leaseClock === 'host',
      'expiresAt is plausible',
    )
    const error = await rejectsWith(
      b.acquireLease('l', { holder: 'bob', ttlMs: h.leaseTtlMs }),
      'LEASE_HELD',
      'second acquire while held',
    )
    ensureEqual(error.context.holder, 'alice', 'LEASE_HELD context.holder')
    await rejectsWith(
      a.acquireLease('l', { holder: 'alice', ttlMs: h.leaseTtlMs }),
      'LEASE_HELD',
      're-acquire by the same holder while held',
    )
    const seen = await b.getLease('l')
    ensureEqual(seen?.token, lease.token, 'getLease token from another instance')
    ensureEqual(seen?.holder, 'alice', 'getLease holder')
    ensureEqual(await a.get('l'), null, 'a lease on a key without a value creates no value')
    ensureSame(await listAll(a, {}), [], 'a lease is never listed')
    ensureEqual(await a.releaseLease(lease), true, 'release of the current lease')
    ensureEqual(await a.getLease('l'), null, 'no lease after release')
    ensureEqual(await a.releaseLease(lease), false, 'second release')
  }),

  check('leases', 'renew extends the lease and keeps the token', async (h) => {
    const a = await h.backend()
    const lease = await a.acquireLease('r', { holder: 'alice', ttlMs: h.shortLeaseTtlMs })
    if (h.capabilities.leaseClock === 'host') h.clock.advance(Math.floor(h.shortLeaseTtlMs / 2))
    else await new Promise((resolve) => setTimeout(resolve, Math.floor(h.shortLeaseTtlMs / 3)))
    const renewed = await a.renewLease(lease)
    ensureEqual(renewed.token, lease.token, 'renew keeps the token')
    ensureEqual(renewed.holder, 'alice', 'renew keeps the holder')
    ensure(renewed.expiresAt > lease.expiresAt, 'renew moves expiresAt forward')
    if (h.capabilities.leaseClock === 'host') {
      h.clock.set(lease.expiresAt + 1)
      ensureEqual(
        (await a.getLease('r'))?.token,
        lease.token,
        'still held after the first expiry time',
      )
      await a.put('r', bytes('v'), { lease: renewed })
      await a.put('r', bytes('w'), { lease })
    }
  }),

  check('leases', 'a lease expires and renew after expiry is LEASE_LOST', async (h) => {
    const a = await h.backend()
    const b = await h.backend()
    const lease = await a.acquireLease('e', { holder: 'alice', ttlMs: h.shortLeaseTtlMs })
    await h.expire(lease)
    await rejectsWith(a.renewLease(lease), 'LEASE_LOST', 'renew after expiry with no contender')
    if (h.capabilities.leaseClock !== 'observer') {
      ensureEqual(await a.getLease('e'), null, 'getLease after expiry')
    }
    const next = await h.acquireAfterExpiry(b, 'e', 'bob', h.leaseTtlMs)
    ensure(next.token > lease.token, `token after expiry ${next.token} > ${lease.token}`)
    await rejectsWith(a.renewLease(lease), 'LEASE_LOST', 'renew of a superseded lease')
    ensureEqual((await b.getLease('e'))?.holder, 'bob', 'new holder after a failed renew')
  }),

  check('leases', 'release never drops a newer holder lease', async (h) => {
    const a = await h.backend()
    const b = await h.backend()
    const old = await a.acquireLease('rel', { holder: 'alice', ttlMs: h.shortLeaseTtlMs })
    await h.expire(old)
    const newer = await h.acquireAfterExpiry(b, 'rel', 'bob', h.leaseTtlMs)
    ensureEqual(await a.releaseLease(old), false, 'release of a superseded lease')
    const current = await b.getLease('rel')
    ensureEqual(current?.token, newer.token, 'the newer lease survives the stale release')
    await rejectsWith(
      a.acquireLease('rel', { holder: 'alice', ttlMs: h.leaseTtlMs }),
      'LEASE_HELD',
      'acquire after a stale release',
    )
    await b.put('rel', bytes('bob'), { lease: newer })
    ensureEqual(await b.releaseLease(newer), true, 'release by the current holder')
  }),

  check('leases', 'fencing tokens strictly increase after release expiry and delete', async (h) => {
    const a = await h.backend()
    const tokens: number[] = []
    const take = async (holder: string) => {
      const lease = await h.acquireAfterExpiry(a, 'tok', holder, h.shortLeaseTtlMs)
      const last = tokens[tokens.length - 1]
      if (last !== undefined)
        ensure(lease.token > last, `token ${lease.token} after ${last} (${holder})`)
      tokens.push(lease.token)
      return lease
    }
    const l1 = await take('after-nothing')
    await a.releaseLease(l1)
    const l2 = await take('after-release')
    await h.expire(l2)
    const l3 = await take('after-expiry')
    await a.put('tok', bytes('v'), { lease: l3 })
    ensureEqual(await a.delete('tok', { lease: l3 }), true, 'fenced delete')
    await a.releaseLease(l3)
    const l4 = await take('after-delete')
    await a.releaseLease(l4)
    await a.put('tok', bytes('again'))
    await a.delete('tok')
    const other = await h.backend()
    const l5 = await h.acquireAfterExpiry(other, 'tok', 'other-instance', h.leaseTtlMs)
    ensure(l5.token > l4.token, `token from another instance ${l5.token} > ${l4.token}`)
  }),

  check(
    'leases',
    'fenced writes succeed and unfenced writes are LEASE_HELD while live',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      await b.put('f', bytes('before'))
      const lease = await a.acquireLease('f', { holder: 'alice', ttlMs: h.leaseTtlMs })
      const m = await a.put('f', bytes('fenced'), { lease })
      await rejectsWith(b.put('f', bytes('intruder')), 'LEASE_HELD', 'unfenced put while leased')
      await rejectsWith(
        b.put('f', bytes('intruder'), { ifMatch: m.version }),
        'LEASE_HELD',
        'unfenced CAS while leased',
      )
      await rejectsWith(b.delete('f'), 'LEASE_HELD', 'unfenced delete while leased')
      ensureBytes((await b.get('f'))?.value, bytes('fenced'), 'value after refused writes')
      const m2 = await a.put('f', bytes('fenced 2'), { lease, ifMatch: m.version })
      ensure(m2.version !== m.version, 'fenced CAS')
      ensureEqual(await a.delete('f', { lease }), true, 'fenced delete')
      ensureEqual(await b.get('f'), null, 'deleted by the fenced delete')
      await a.put('g', bytes('g'))
      await rejectsWith(
        a.put('g', bytes('x'), { lease }),
        'INVALID_ARGUMENT',
        'a lease of another key',
      )
      await a.releaseLease(lease)
      await b.put('f', bytes('free'))
      ensureBytes((await a.get('f'))?.value, bytes('free'), 'unfenced put after release')
    },
  ),

  check(
    'leases',
    'stale superseded or expired leases are LEASE_LOST and store nothing',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      const old = await a.acquireLease('s', { holder: 'alice', ttlMs: h.shortLeaseTtlMs })
      await a.put('s', bytes('alice'), { lease: old })
      await h.expire(old)
      await rejectsWith(
        a.put('s', bytes('stale'), { lease: old }),
        'LEASE_LOST',
        'fenced put with an expired lease',
      )
      await rejectsWith(
        a.delete('s', { lease: old }),
        'LEASE_LOST',
        'fenced delete with an expired lease',
      )
      ensureBytes((await b.get('s'))?.value, bytes('alice'), 'nothing stored by an expired lease')
      const newer = await h.acquireAfterExpiry(b, 's', 'bob', h.leaseTtlMs)
      await rejectsWith(
        a.put('s', bytes('stale'), { lease: old }),
        'LEASE_LOST',
        'fenced put with a superseded lease',
      )
      await rejectsWith(
        a.delete('s', { lease: old }),
        'LEASE_LOST',
        'fenced delete with a superseded lease',
      )
      await rejectsWith(
        a.put('s', bytes('stale'), { lease: old, ifMatch: (await a.head('s'))?.version as string }),
        'LEASE_LOST',
        'fenced CAS with a superseded lease',
      )
      ensureBytes((await b.get('s'))?.value, bytes('alice'), 'nothing stored by a superseded lease')
      await b.put('s', bytes('bob'), { lease: newer })
      await b.releaseLease(newer)
      await rejectsWith(
        a.put('s', bytes('stale'), { lease: old }),
        'LEASE_LOST',
        'fenced put after the newer lease was released',
      )
      ensureBytes((await a.get('s'))?.value, bytes('bob'), 'value of the newer holder intact')
    },
  ),
]
