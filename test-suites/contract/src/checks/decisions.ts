import { isAgentStateError } from '@agent-state/core'
import { bytes, ensure, ensureEqual, ensureSame, fail, rejectsWith } from '../assert.js'
import { type ContractCheck, check, notApplicable } from '../check.js'
import { probedDestroy, sleep } from '../harness.js'

/**
 * The points docs/contract.md decides where the contract text once left a
 * choice open: where a renewal extends from, which clock `updatedAt` follows,
 * whether delimiter groups count toward `limit`, and what `close()` may close.
 */

/** Skip reason of the destroy check on an instance without `destroy` (optional in the contract). */
export const NO_DESTROY = 'the instance has no destroy (optional in the contract)'

/** How far a server's or observer's clock may plausibly be from this host's. */
const PLAUSIBLE_MS = 5 * 60_000

export const decisionChecks: ContractCheck[] = [
  check(
    'leases',
    'renewLease extends from the renewal time not from the old expiresAt',
    async (h) => {
      const a = await h.backend()
      const host = h.capabilities.leaseClock === 'host'
      const ttlMs = h.shortLeaseTtlMs
      const lease = await a.acquireLease('renew-from', { holder: 'h', ttlMs })
      const gap = Math.floor(ttlMs / 3)
      if (host) h.clock.advance(gap)
      else await sleep(gap)
      const renewedAt = host ? h.clock.now() : Date.now()
      const renewed = await a.renewLease(lease)
      ensureEqual(renewed.ttlMs, ttlMs, 'renew keeps ttlMs')
      if (host) {
        ensureEqual(renewed.expiresAt, renewedAt + ttlMs, 'expiresAt = renewal time + ttlMs')
      } else {
        // On another clock the renewal time is the server's; from the old expiresAt it would be a
        // whole ttlMs later, from the renewal time only the time that passed.
        ensure(
          renewed.expiresAt < lease.expiresAt + ttlMs,
          `renewed expiresAt ${renewed.expiresAt} is not the old ${lease.expiresAt} + ttlMs ${ttlMs}`,
        )
        ensure(renewed.expiresAt > lease.expiresAt, 'renew moves expiresAt forward')
      }
      // Renewing again at once moves it (almost) nowhere: it never adds up.
      const again = await a.renewLease(renewed)
      ensure(
        again.expiresAt < renewed.expiresAt + ttlMs,
        `a second renewal right away gives ${again.expiresAt}, not ${renewed.expiresAt} + ttlMs`,
      )
      if (host) ensureEqual(again.expiresAt, renewed.expiresAt, 'no time passed, no extension')
    },
  ),

  check(
    'metadata',
    'updatedAt is on the lease clock the backend declares and follows an injected one',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      const host = h.capabilities.leaseClock === 'host'
      const onClock = (updatedAt: number | undefined, what: string): void => {
        ensure(typeof updatedAt === 'number' && Number.isSafeInteger(updatedAt), `${what}: integer`)
        if (host) ensureEqual(updatedAt, h.clock.now(), `${what}: the injected clock's time`)
        else {
          ensure(
            Math.abs(updatedAt - Date.now()) < PLAUSIBLE_MS,
            `${what}: ${updatedAt} is near this host's time`,
          )
        }
      }
      // Years away from real time, so a backend that reads Date.now() instead is caught.
      if (host) h.clock.advance(300_000_000_000)
      onClock((await a.put('ua/k', bytes('one'))).updatedAt, 'an unconditional put')
      onClock((await b.head('ua/k'))?.updatedAt, 'head after it')
      if (host) h.clock.advance(12_345)
      const second = await b.put('ua/k', bytes('two'))
      onClock(second.updatedAt, 'an overwrite by another instance')
      onClock((await a.get('ua/k'))?.meta.updatedAt, 'get after it')
      const listed = (await a.list({ prefix: 'ua/' })).entries[0]?.updatedAt
      if (listed !== undefined) ensureEqual(listed, second.updatedAt, 'listed updatedAt')
      await a.delete('ua/k')
      if (host) h.clock.advance(1)
      onClock((await a.put('ua/k', bytes('three'), { ifNoneMatch: '*' })).updatedAt, 'a re-create')
    },
  ),

  check('listing', 'delimiter groups count toward limit', async (h) => {
    const b = await h.backend()
    for (const key of ['a/1', 'a/2', 'b', 'c/1', 'c/2/x', 'd', 'e/1']) await b.put(key, bytes(key))
    for (const limit of [1, 2, 3]) {
      const entries: string[] = []
      const prefixes: string[] = []
      let cursor: string | undefined
      for (let i = 0; i < 100; i++) {
        const options = { delimiter: '/' as const, limit }
        const page = await b.list(cursor === undefined ? options : { ...options, cursor })
        const items = page.entries.length + (page.prefixes?.length ?? 0)
        ensure(
          items <= limit,
          `limit ${limit}: a page of ${page.entries.length} entries and ${page.prefixes?.length ?? 0} groups`,
        )
        entries.push(...page.entries.map((e) => e.key))
        prefixes.push(...(page.prefixes ?? []))
        cursor = page.cursor
        if (cursor === undefined) break
      }
      ensureEqual(cursor, undefined, `limit ${limit}: the listing ends`)
      ensureSame(entries, ['b', 'd'], `limit ${limit}: the entries`)
      ensureSame(prefixes, ['a/', 'c/', 'e/'], `limit ${limit}: the groups`)
    }
  }),

  check(
    'basic',
    'destroy removes every value and lease of the namespace',
    async (h) => {
      const a = await h.backend()
      if (a.destroy === undefined) fail('the instance has no destroy, yet its probe had one')
      await a.put('ds/a', bytes('a'))
      await a.put('ds/b/c', bytes('c'))
      await a.acquireLease('ds/held', { holder: 'h', ttlMs: h.leaseTtlMs })
      await a.destroy()
      const b = await h.backend()
      ensureEqual(await b.get('ds/a'), null, 'a value after destroy')
      ensureEqual(await b.getLease('ds/held'), null, 'a lease after destroy')
      ensureSame((await b.list({})).entries, [], 'the listing after destroy')
      // The namespace is usable again: an unfenced write to the once-leased key succeeds.
      await b.put('ds/held', bytes('free'))
    },
    // Optional in the contract: a backend without it is skipped by name, never passed vacuously.
    { skip: (caps) => (probedDestroy(caps) ? undefined : notApplicable(NO_DESTROY)) },
  ),

  check(
    'errors',
    'close of one instance leaves the others on the same storage working',
    async (h) => {
      const a = await h.backend()
      const b = await h.backend()
      await a.put('cl/k', bytes('v'))
      const lease = await b.acquireLease('cl/held', { holder: 'h', ttlMs: h.leaseTtlMs })
      await a.close()
      await rejectsWith(a.get('cl/k'), 'CLOSED', 'the closed instance')
      // Whatever the instances share (a store, a database connection, a client pool) stays open.
      const still = async <T>(what: string, call: () => Promise<T>): Promise<T> => {
        try {
          return await call()
        } catch (error) {
          const code = isAgentStateError(error) ? error.code : String(error)
          return fail(`${what} after another instance was closed: ${code}`)
        }
      }
      const read = await still('another instance reads', () => b.get('cl/k'))
      ensureEqual(read?.meta.size, 1, 'another instance reads')
      await still('another instance writes', () => b.put('cl/k', bytes('w')))
      await still('a fenced write', () => b.put('cl/held', bytes('x'), { lease }))
      const page = await still('another instance lists', () => b.list({ prefix: 'cl/' }))
      ensureEqual(page.entries.length, 2, 'another instance lists')
      const renewed = await still('another instance renews', () => b.renewLease(lease))
      ensureEqual(renewed.token, lease.token, 'another instance renews')
      const c = await h.backend()
      const seen = await still('a new instance reads', () => c.get('cl/k'))
      ensureEqual(seen?.meta.size, 1, 'a new instance reads')
      await still('a new instance writes', () => c.put('cl/new', bytes('n')))
      await b.close()
      const after = await still('the new instance', () => c.head('cl/new'))
      ensureEqual(after?.size, 1, 'the new instance after both others closed')
    },
  ),
]
