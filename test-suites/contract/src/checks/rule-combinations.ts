import type { Backend, ListOptions } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, rejectsWith } from '../assert.js'
import { type ContractCheck, check, notApplicable } from '../check.js'

/**
 * Two rules at once, where independent mutants got through a suite that
 * tested each rule alone: a size after an overwrite of another length, a
 * lease together with a precondition, a prefix on every continuation page, a
 * lease across the delete of its key's value, a lease's key matched exactly,
 * and TTLs that are not whole seconds.
 */

/** Every page of a listing, each page's entry keys and groups kept apart. */
async function pagesOf(
  b: Backend,
  options: ListOptions,
): Promise<Array<{ keys: string[]; prefixes: string[] }>> {
  const pages: Array<{ keys: string[]; prefixes: string[] }> = []
  let cursor: string | undefined
  for (let i = 0; i < 1000; i++) {
    const page = await b.list(cursor === undefined ? options : { ...options, cursor })
    pages.push({ keys: page.entries.map((e) => e.key), prefixes: [...(page.prefixes ?? [])] })
    if (page.cursor === undefined) return pages
    cursor = page.cursor
  }
  throw new Error('a listing of a few keys did not end within 1000 pages')
}

/** Checks the size that head, get and a listing report for `key` equals `size`. */
async function ensureSizeEverywhere(
  b: Backend,
  key: string,
  size: number,
  what: string,
): Promise<void> {
  ensureEqual((await b.head(key))?.size, size, `${what}: head size`)
  const got = await b.get(key)
  ensureEqual(got?.meta.size, size, `${what}: get meta.size`)
  ensureEqual(got?.value.byteLength, size, `${what}: get value length`)
  const entry = (await b.list({ prefix: key })).entries.find((e) => e.key === key)
  ensure(entry !== undefined, `${what}: listed`)
  if (entry.size !== undefined) ensureEqual(entry.size, size, `${what}: listed size`)
}

export const ruleCombinationChecks: ContractCheck[] = [
  check(
    'metadata',
    'an unconditional overwrite with a value of another length reports the new size',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      // Each writer overwrites what the other wrote, so no instance can answer from its own
      // last write; sizes grow, shrink, reach 0 and grow from 0.
      const sizes = [3, 10, 1, 0, 7, 4096, 5]
      for (const [i, size] of sizes.entries()) {
        const writer = i % 2 === 0 ? a : b
        const meta = await writer.put('sz/k', new Uint8Array(size).fill(i + 1))
        ensureEqual(meta.size, size, `put size after overwriting with ${size} bytes`)
        await ensureSizeEverywhere(a, 'sz/k', size, `overwrite with ${size} bytes, read by a`)
        await ensureSizeEverywhere(b, 'sz/k', size, `overwrite with ${size} bytes, read by b`)
      }
      // The same after a fenced and a writer-carrying overwrite.
      const lease = await a.acquireLease('sz/k', { holder: 'h', ttlMs: h.leaseTtlMs })
      await a.put('sz/k', bytes('fenced!!'), { lease, writer: { writerId: 'w' } })
      await ensureSizeEverywhere(b, 'sz/k', 8, 'a fenced overwrite with 8 bytes')
      await a.put('sz/k', bytes('f'), { lease })
      await ensureSizeEverywhere(b, 'sz/k', 1, 'a fenced overwrite with 1 byte')
    },
  ),

  check(
    'leases',
    'a fenced write or delete that also names ifMatch or ifNoneMatch must pass both checks',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      const first = await a.put('fp/k', bytes('one'))
      const lease = await a.acquireLease('fp/k', { holder: 'h', ttlMs: h.leaseTtlMs })
      const stale = `${first.version}x`
      // The lease passes, the precondition fails: PRECONDITION_FAILED, nothing stored.
      await rejectsWith(
        a.put('fp/k', bytes('two'), { lease, ifMatch: stale }),
        'PRECONDITION_FAILED',
        'a fenced put with a stale ifMatch',
      )
      await rejectsWith(
        a.put('fp/k', bytes('two'), { lease, ifNoneMatch: '*' }),
        'PRECONDITION_FAILED',
        'a fenced create-if-absent of an existing key',
      )
      await rejectsWith(
        a.delete('fp/k', { lease, ifMatch: stale }),
        'PRECONDITION_FAILED',
        'a fenced delete with a stale ifMatch',
      )
      ensureEqual((await b.head('fp/k'))?.version, first.version, 'nothing changed by them')
      // Both pass.
      const second = await a.put('fp/k', bytes('two'), { lease, ifMatch: first.version })
      ensureBytes((await b.get('fp/k'))?.value, bytes('two'), 'a fenced put with a current ifMatch')
      // The precondition passes, the lease is stale: LEASE_LOST, nothing stored.
      ensureEqual(await a.releaseLease(lease), true, 'release')
      const next = await b.acquireLease('fp/k', { holder: 'h2', ttlMs: h.leaseTtlMs })
      await rejectsWith(
        a.put('fp/k', bytes('three'), { lease, ifMatch: second.version }),
        'LEASE_LOST',
        'a put with a stale lease and a current ifMatch',
      )
      await rejectsWith(
        a.delete('fp/k', { lease, ifMatch: second.version }),
        'LEASE_LOST',
        'a delete with a stale lease and a current ifMatch',
      )
      // No lease at all while one is live: LEASE_HELD, whatever the precondition says.
      await rejectsWith(
        a.put('fp/k', bytes('three'), { ifMatch: second.version }),
        'LEASE_HELD',
        'an unfenced put with a current ifMatch while leased',
      )
      await rejectsWith(
        a.delete('fp/k', { ifMatch: second.version }),
        'LEASE_HELD',
        'an unfenced delete with a current ifMatch while leased',
      )
      ensureEqual((await b.head('fp/k'))?.version, second.version, 'nothing changed by them')
      ensureEqual(
        await b.delete('fp/k', { lease: next, ifMatch: second.version }),
        true,
        'a fenced delete with a current ifMatch',
      )
      ensureEqual(await a.get('fp/k'), null, 'deleted')
      // Create-if-absent under the lease: passes on the absent key, then fails on it.
      const created = await b.put('fp/k', bytes('back'), { lease: next, ifNoneMatch: '*' })
      ensureEqual((await a.head('fp/k'))?.version, created.version, 'a fenced create-if-absent')
      await rejectsWith(
        b.put('fp/k', bytes('again'), { lease: next, ifNoneMatch: '*' }),
        'PRECONDITION_FAILED',
        'a second fenced create-if-absent',
      )
    },
  ),

  check(
    'listing',
    'every continuation page of a prefixed listing stays inside the prefix',
    async (h) => {
      const b = await h.backend()
      // Keys on both sides of the prefix in byte order, and a key that only shares its start.
      // (`p/undefined`: a listing without a delimiter must never look for one.)
      const inside = ['p/1', 'p/2', 'p/3', 'p/4', 'p/5', 'p/d/x', 'p/d/y', 'p/e', 'p/undefined']
      const outside = ['a', 'o', 'p', 'p.', 'p0', 'pa', 'q', 'z/1']
      for (const key of [...outside, ...inside]) await b.put(key, bytes(key))
      for (const limit of [1, 2, 3]) {
        const pages = await pagesOf(b, { prefix: 'p/', limit })
        for (const [i, page] of pages.entries()) {
          for (const key of page.keys) {
            ensure(key.startsWith('p/'), `limit ${limit}, page ${i + 1}: ${key} is outside "p/"`)
          }
          ensure(page.keys.length <= limit, `limit ${limit}, page ${i + 1}: at most ${limit}`)
        }
        ensureSame(
          pages.flatMap((p) => p.keys),
          inside,
          `limit ${limit}: every key inside the prefix, once`,
        )
        const grouped = await pagesOf(b, { prefix: 'p/', limit, delimiter: '/' })
        for (const [i, page] of grouped.entries()) {
          for (const item of [...page.keys, ...page.prefixes]) {
            ensure(item.startsWith('p/'), `delimiter, limit ${limit}, page ${i + 1}: ${item}`)
          }
        }
        ensureSame(
          grouped.flatMap((p) => p.keys),
          ['p/1', 'p/2', 'p/3', 'p/4', 'p/5', 'p/e', 'p/undefined'],
          `delimiter, limit ${limit}: the entries`,
        )
        ensureSame(
          grouped.flatMap((p) => p.prefixes),
          ['p/d/'],
          `delimiter, limit ${limit}: the groups`,
        )
        // A prefix that is not a segment: "p" takes "p", "p.", "p/…", "p0" and "pa", never "q".
        const loose = await pagesOf(b, { prefix: 'p', limit })
        ensureSame(
          loose.flatMap((p) => p.keys),
          ['p', 'p.', ...inside, 'p0', 'pa'],
          `prefix "p", limit ${limit}`,
        )
      }
    },
  ),

  check('leases', "a lease lives on when its holder deletes the key's value", async (h) => {
    const a = await h.backend()
    const b = await h.backend()
    const lease = await a.acquireLease('ld/k', { holder: 'h', ttlMs: h.leaseTtlMs })
    await a.put('ld/k', bytes('v'), { lease })
    ensureEqual(await a.delete('ld/k', { lease }), true, 'a fenced delete by the holder')
    ensureEqual(await b.get('ld/k'), null, 'the value is gone')
    const still = await b.getLease('ld/k')
    ensureEqual(still?.token, lease.token, 'the lease is still the current one')
    ensureEqual(still?.expiresAt, lease.expiresAt, 'with its expiry')
    await rejectsWith(b.put('ld/k', bytes('x')), 'LEASE_HELD', 'an unfenced put after the delete')
    await rejectsWith(b.delete('ld/k'), 'LEASE_HELD', 'an unfenced delete after the delete')
    await rejectsWith(
      b.acquireLease('ld/k', { holder: 'other', ttlMs: h.leaseTtlMs }),
      'LEASE_HELD',
      'an acquire after the delete',
    )
    ensureEqual(await a.delete('ld/k', { lease }), false, 'a second fenced delete finds nothing')
    const renewed = await a.renewLease(lease)
    ensureEqual(renewed.token, lease.token, 'renew after the delete')
    await a.put('ld/k', bytes('again'), { lease: renewed, ifNoneMatch: '*' })
    ensureBytes((await b.get('ld/k'))?.value, bytes('again'), 'the holder re-creates the value')
    ensureEqual(await a.releaseLease(renewed), true, 'release after the delete')
    await rejectsWith(a.renewLease(renewed), 'LEASE_LOST', 'renew of the released lease')
    const next = await b.acquireLease('ld/k', { holder: 'other', ttlMs: h.leaseTtlMs })
    ensure(next.token > lease.token, `a later token ${next.token} > ${lease.token}`)
  }),

  check('leases', 'a lease belongs to its exact key never to a prefix of it', async (h) => {
    const a = await h.backend()
    const b = await h.backend()
    const job = await a.acquireLease('job', { holder: 'h', ttlMs: h.leaseTtlMs })
    for (const other of ['job/1', 'jobs', 'jo', 'job/1/x', 'job.']) {
      ensureEqual(await b.getLease(other), null, `no lease on ${other}`)
      await b.put(other, bytes(other))
      ensureEqual(await b.delete(other), true, `an unfenced delete of ${other}`)
      await rejectsWith(
        b.put(other, bytes('x'), { lease: { ...job, key: other } }),
        'LEASE_LOST',
        `job's token used as a lease of ${other}`,
      )
    }
    const child = await b.acquireLease('job/1', { holder: 'c', ttlMs: h.leaseTtlMs })
    const sibling = await b.acquireLease('jobs', { holder: 's', ttlMs: h.leaseTtlMs })
    ensureEqual((await a.getLease('job'))?.token, job.token, 'job keeps its lease')
    ensureEqual((await a.getLease('job/1'))?.holder, 'c', 'job/1 has its own')
    await rejectsWith(a.put('job/1', bytes('x'), { lease: job }), 'INVALID_ARGUMENT', 'cross-key')
    ensureEqual(await b.releaseLease(child), true, 'release of job/1')
    ensureEqual(await b.releaseLease(sibling), true, 'release of jobs')
    ensureEqual((await b.getLease('job'))?.token, job.token, 'job is still leased')
    await rejectsWith(b.put('job', bytes('x')), 'LEASE_HELD', 'job is still fenced')
    ensureEqual(await a.releaseLease(job), true, 'release of job')
    // The other way round: a lease on job/1 neither fences nor shows on job.
    const deeper = await a.acquireLease('job/1', { holder: 'h', ttlMs: h.leaseTtlMs })
    ensureEqual(await b.getLease('job'), null, 'no lease on job from job/1')
    await b.put('job', bytes('free'))
    ensureEqual((await b.getLease('job/1'))?.token, deeper.token, 'job/1 keeps its lease')
  }),

  check(
    'leases',
    'TTLs under a second and not whole seconds expire exactly on the injected clock',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      for (const ttlMs of [1, 2, 250, 999, 1001, 1500]) {
        const key = `ttl/${ttlMs}`
        h.clock.advance(13)
        const start = h.clock.now()
        const lease = await a.acquireLease(key, { holder: 'h', ttlMs })
        ensureEqual(lease.ttlMs, ttlMs, `ttlMs ${ttlMs} kept`)
        ensureEqual(lease.expiresAt, start + ttlMs, `expiresAt of a ${ttlMs} ms lease`)
        h.clock.set(lease.expiresAt - 1)
        ensureEqual((await b.getLease(key))?.token, lease.token, `${ttlMs} ms: live at -1 ms`)
        await rejectsWith(b.put(key, bytes('x')), 'LEASE_HELD', `${ttlMs} ms: fenced at -1 ms`)
        h.clock.set(lease.expiresAt)
        ensureEqual(await b.getLease(key), null, `${ttlMs} ms: expired at expiresAt`)
        await rejectsWith(a.renewLease(lease), 'LEASE_LOST', `${ttlMs} ms: renew at expiresAt`)
        const next = await b.acquireLease(key, { holder: 'o', ttlMs })
        ensure(next.token > lease.token, `${ttlMs} ms: a takeover at expiresAt`)
        // A renewal half-way through extends by the same fraction of a second.
        const half = Math.floor(ttlMs / 2)
        h.clock.advance(half)
        const renewed = await b.renewLease(next)
        ensureEqual(renewed.expiresAt, h.clock.now() + ttlMs, `${ttlMs} ms: renewed expiresAt`)
        h.clock.set(renewed.expiresAt - 1)
        await b.put(key, bytes('in time'), { lease: renewed })
        h.clock.set(renewed.expiresAt)
        await rejectsWith(
          b.put(key, bytes('late'), { lease: renewed }),
          'LEASE_LOST',
          `${ttlMs} ms: a fenced put at the renewed expiresAt`,
        )
        ensureEqual(await a.getLease(key), null, `${ttlMs} ms: expired at the renewed expiresAt`)
        await a.put(key, bytes('free'))
      }
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
]
