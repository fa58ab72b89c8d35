import type { Backend, Lease } from '@agent-state/core'
import { type RedisServer, redisCli } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisBackend, redisKeyLayout } from '../src/index.js'
import { failureOf, startReplicaPair, until } from './replica-pair.js'

/**
 * The promotion hold on real servers: a primary and a replica, the replica
 * promoted with `REPLICAOF NO ONE`, backends (replication off) on both.
 * The hold is the longest of the configured bound and the longest TTL the
 * namespace granted (recorded by the grants, replicated with them); both are
 * seconds here so the suite does not wait minutes. Namespace `hold`: its
 * longest grant (`kept`, KEPT_MS) outlasts the configured 3 s; `recorded`: no
 * bound configured, the hold is the recorded 3 s; `bounded`: the configured
 * 4 s outlasts the recorded 1 s.
 */

const HOLD_MS = 3000
const KEPT_MS = 8000
const NAMESPACE = 'hold'
const layout = redisKeyLayout('as', NAMESPACE)
const bytes = (text: string) => new TextEncoder().encode(text)
let primary: RedisServer
let replica: RedisServer
const opened: Backend[] = []
/** A lease granted on the primary before the promotion (and replicated). */
let kept: Lease

function backend(server: RedisServer, namespace = NAMESPACE, maxLeaseTtlMs = HOLD_MS): Backend {
  const created = createRedisBackend({ port: server.port, namespace, maxLeaseTtlMs })
  opened.push(created)
  return created
}

/** The server's clock in ms (`TIME`). */
/** A backend with every option at its default (no `maxLeaseTtlMs`, no `promotionHoldMs`). */
function defaults(server: RedisServer, namespace: string): Backend {
  const created = createRedisBackend({ port: server.port, namespace })
  opened.push(created)
  return created
}

/**
 * Waits until the replica has a lease (so every earlier write: a replica applies in order). Its
 * longest-TTL record came in the same script effect; the tests, not this wait, check it is there.
 */
async function replicated(namespace: string, lease: Lease): Promise<void> {
  const record = redisKeyLayout('as', namespace).record(lease.key)
  await until(
    `${namespace}'s lease to replicate`,
    async () => (await redisCli(replica.port, ['HGET', record, 'li'])).trim() === lease.leaseId,
  )
}

async function serverNow(server: RedisServer): Promise<number> {
  const [seconds, micros] = (await redisCli(server.port, ['TIME'])).trim().split('\n')
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}

async function replidOf(server: RedisServer): Promise<{ id: string; id2: string }> {
  const info = await redisCli(server.port, ['INFO', 'replication'])
  return {
    id: /master_replid:([0-9a-f]+)/.exec(info)?.[1] ?? 'none',
    id2: /master_replid2:([0-9a-f]+)/.exec(info)?.[1] ?? 'none',
  }
}

beforeAll(async () => {
  ;({ primary, replica } = await startReplicaPair())
  // Outlives the hold tests below (renewed during the hold); the old primary's backend allows it.
  kept = await backend(primary, NAMESPACE, KEPT_MS).acquireLease('kept', {
    holder: 'keeper',
    ttlMs: KEPT_MS,
  })
  // The grants the other namespaces' holds are measured from, with every option at its default.
  const recorded = defaults(primary, 'recorded')
  await recorded.acquireLease('long', { holder: 'h', ttlMs: 3000 })
  const short = await recorded.acquireLease('short', { holder: 'h', ttlMs: 500 })
  const bounded = await defaults(primary, 'bounded').acquireLease('k', { holder: 'h', ttlMs: 1000 })
  await replicated(NAMESPACE, kept)
  await replicated('recorded', short)
  await replicated('bounded', bounded)
  await redisCli(replica.port, ['REPLICAOF', 'NO', 'ONE'])
}, 60_000)
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()))
  // Their data is not needed any more, and the old primary (replica, then primary again in the
  // failback test) sometimes ignored SIGTERM for over 30 s (2 runs in 4): kill both outright.
  for (const server of [primary, replica]) {
    if (server.pid !== undefined) process.kill(server.pid, 'SIGKILL')
  }
  await Promise.all([primary.stop(), replica.stop()])
}, 60_000)

describe('promotion hold (replication off)', () => {
  /** The hold's end, as the first refusal on the promoted node reported it. */
  let holdUntil = 0

  it('a node never promoted has no hold: it grants at once and records only the longest TTL', async () => {
    expect((await replidOf(primary)).id2).toMatch(/^0+$/)
    const lease = await backend(primary).acquireLease('fresh', { holder: 'h', ttlMs: 1000 })
    expect(lease.holder).toBe('h')
    // A shorter grant leaves the longest (KEPT_MS, from `kept`) as it was; no hold fields.
    expect((await redisCli(primary.port, ['HGETALL', layout.meta])).trim().split('\n')).toEqual([
      'mt',
      String(KEPT_MS),
    ])
  })

  it('a renewal records its TTL too (a lease granted before grants recorded it)', async () => {
    const legacy = redisKeyLayout('as', 'legacy-renew')
    const expiresAt = (await serverNow(primary)) + 60_000
    // A lease as 0.3 stored it, in a namespace with no recorded longest TTL.
    await redisCli(primary.port, [
      'HSET',
      legacy.record('k'),
      ...['lh', 'old', 'lt', '7', 'lttl', '7000', 'le', String(expiresAt), 'n', '7'],
    ])
    const b = defaults(primary, 'legacy-renew')
    const renewed = await b.renewLease({
      key: 'k',
      holder: 'old',
      token: 7,
      ttlMs: 7000,
      expiresAt,
    })
    expect(renewed.ttlMs).toBe(7000)
    expect((await redisCli(primary.port, ['HGET', legacy.meta, 'mt'])).trim()).toBe('7000')
  })

  it('the promoted node refuses a grant with LEASE_HELD (promotionHold) until the hold ends', async () => {
    const ids = await replidOf(replica)
    expect(ids.id2).not.toMatch(/^0+$/)
    const before = await serverNow(replica)
    const refused = await failureOf(
      backend(replica).acquireLease('free', { holder: 'new', ttlMs: 1000 }),
    )
    const after = await serverNow(replica)
    expect(refused).toMatchObject({
      code: 'LEASE_HELD',
      context: { key: 'free', holder: null, promotionHold: true },
    })
    holdUntil = (refused.context as { expiresAt: number }).expiresAt
    // The hold runs from this first acquire, on the server's clock, for the namespace's longest
    // grant (KEPT_MS), which is longer than the configured maxLeaseTtlMs.
    expect(holdUntil).toBeGreaterThanOrEqual(before + KEPT_MS)
    expect(holdUntil).toBeLessThanOrEqual(after + KEPT_MS)
    // Recorded on the server, under the promoted node's own replication id.
    expect((await redisCli(replica.port, ['HGET', layout.meta, 'hr'])).trim()).toBe(ids.id)
  })

  it('a second backend instance on the promoted node is refused until the same end', async () => {
    const refused = await failureOf(
      backend(replica).acquireLease('other', { holder: 'second', ttlMs: 1000 }),
    )
    expect(refused).toMatchObject({
      code: 'LEASE_HELD',
      context: { holder: null, promotionHold: true, expiresAt: holdUntil },
    })
  })

  it('an instance configured with a longer hold extends it, from the same start', async () => {
    const longer = createRedisBackend({
      port: replica.port,
      namespace: NAMESPACE,
      maxLeaseTtlMs: HOLD_MS,
      promotionHoldMs: KEPT_MS + 1000,
    })
    opened.push(longer)
    const refused = await failureOf(longer.acquireLease('other', { holder: 'longer', ttlMs: 1000 }))
    expect(refused).toMatchObject({
      code: 'LEASE_HELD',
      context: { promotionHold: true, expiresAt: holdUntil + 1000 },
    })
    holdUntil += 1000
    // Every instance now honours the longer end.
    expect(
      await failureOf(backend(replica).acquireLease('other', { holder: 'x', ttlMs: 1000 })),
    ).toMatchObject({
      context: { promotionHold: true, expiresAt: holdUntil },
    })
  })

  it('a lease the promoted node has is renewed, fenced and reported as itself during the hold', async () => {
    const b = backend(replica)
    const renewed = await b.renewLease(kept)
    expect(renewed.leaseId).toBe(kept.leaseId)
    expect(renewed.expiresAt).toBeGreaterThan(kept.expiresAt)
    await b.put('kept', bytes('fenced'), { lease: renewed })
    // Its key is held by its holder, not by the hold.
    expect(await failureOf(b.acquireLease('kept', { holder: 'new', ttlMs: 1000 }))).toMatchObject({
      code: 'LEASE_HELD',
      context: { holder: 'keeper', expiresAt: renewed.expiresAt },
    })
    // Plain writes and reads are not held either.
    await b.put('plain', bytes('v'))
    expect((await b.get('plain'))?.value).toEqual(bytes('v'))
    // All of this ran during the hold (else the test proved nothing).
    expect(await serverNow(replica)).toBeLessThan(holdUntil)
    expect(await b.releaseLease(renewed)).toBe(true)
  })

  it('with every option at its default, the hold lasts the longest TTL the namespace granted', async () => {
    const b = defaults(replica, 'recorded')
    const before = await serverNow(replica)
    const refused = await failureOf(b.acquireLease('free', { holder: 'new', ttlMs: 100 }))
    const after = await serverNow(replica)
    expect(refused).toMatchObject({ code: 'LEASE_HELD', context: { promotionHold: true } })
    // The 3 s grant bounds it (not the 500 ms one, not a fixed default).
    const end = (refused.context as { expiresAt: number }).expiresAt
    expect(end).toBeGreaterThanOrEqual(before + 3000)
    expect(end).toBeLessThanOrEqual(after + 3000)
    await until('the recorded hold to end', async () => (await serverNow(replica)) > end, 30_000)
    expect((await b.acquireLease('free', { holder: 'new', ttlMs: 100 })).holder).toBe('new')
    // A longer grant after the hold is not one the old primary acknowledged: no new hold.
    expect((await b.acquireLease('longer', { holder: 'new', ttlMs: 20_000 })).holder).toBe('new')
    expect((await b.acquireLease('next', { holder: 'new', ttlMs: 100 })).holder).toBe('new')
    expect(
      (await redisCli(replica.port, ['HGET', redisKeyLayout('as', 'recorded').meta, 'mt'])).trim(),
    ).toBe('20000')
  }, 60_000)

  it('an explicit maxLeaseTtlMs is the hold when the recorded TTL is shorter', async () => {
    const before = await serverNow(replica)
    const refused = await failureOf(
      backend(replica, 'bounded', 4000).acquireLease('free', { holder: 'new', ttlMs: 100 }),
    )
    const after = await serverNow(replica)
    expect(refused).toMatchObject({ code: 'LEASE_HELD', context: { promotionHold: true } })
    const end = (refused.context as { expiresAt: number }).expiresAt
    expect(end).toBeGreaterThanOrEqual(before + 4000)
    expect(end).toBeLessThanOrEqual(after + 4000)
    // Above the bound is refused, as it is everywhere without replication.
    expect(
      (
        await failureOf(
          backend(replica, 'bounded', 4000).acquireLease('x', { holder: 'h', ttlMs: 4001 }),
        )
      ).code,
    ).toBe('INVALID_ARGUMENT')
  })

  it('a corrupt hold record is CORRUPT, never an empty one', async () => {
    const broken = redisKeyLayout('as', 'broken-hold').meta
    await redisCli(replica.port, ['HSET', broken, 'hr', (await replidOf(replica)).id, 'hf', 'x'])
    const result = await failureOf(
      backend(replica, 'broken-hold').acquireLease('k', { holder: 'h', ttlMs: 1000 }),
    )
    expect(result.code).toBe('CORRUPT')
    // So is an unreadable longest TTL, on a node never promoted too.
    const brokenTtl = redisKeyLayout('as', 'broken-ttl').meta
    await redisCli(primary.port, ['HSET', brokenTtl, 'mt', 'x'])
    expect(
      (
        await failureOf(
          defaults(primary, 'broken-ttl').acquireLease('k', { holder: 'h', ttlMs: 1000 }),
        )
      ).code,
    ).toBe('CORRUPT')
  })

  it('grants once the hold is over; a backend opened later on the settled node does not wait', async () => {
    await until('the hold to end', async () => (await serverNow(replica)) > holdUntil, 30_000)
    const lease = await backend(replica).acquireLease('free', { holder: 'new', ttlMs: 1000 })
    expect(lease.holder).toBe('new')
    // A fresh instance, first acquire on a free key: granted at once.
    const later = await backend(replica).acquireLease('later', { holder: 'later', ttlMs: 1000 })
    expect(later.holder).toBe('later')
  })

  it('another promotion (the old primary promoted back) starts a new hold there', async () => {
    await redisCli(primary.port, ['REPLICAOF', '127.0.0.1', String(replica.port)])
    await until('the failback link', async () =>
      (await redisCli(primary.port, ['INFO', 'replication'])).includes('master_link_status:up'),
    )
    // The replica's settled hold record arrives with the data...
    await until(
      'the hold record to replicate',
      async () => (await redisCli(primary.port, ['EXISTS', layout.meta])).trim() === '1',
    )
    await redisCli(primary.port, ['REPLICAOF', 'NO', 'ONE'])
    // ...but it belongs to the other node's id: this promotion holds grants again.
    const refused = await failureOf(
      backend(primary).acquireLease('after-failback', { holder: 'h', ttlMs: 1000 }),
    )
    expect(refused).toMatchObject({ code: 'LEASE_HELD', context: { promotionHold: true } })
    expect((await redisCli(primary.port, ['HGET', layout.meta, 'hr'])).trim()).toBe(
      (await replidOf(primary)).id,
    )
  })
})
