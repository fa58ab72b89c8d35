import { errorCodeOf } from '@agent-state/contract'
import type { Lease } from '@agent-state/core'
import { redisCli } from '@agent-state/test-services'
import { describe, expect, it } from 'vitest'
import { redisKeyLayout } from '../src/index.js'
import { privateRedisServer } from './private-server.js'

/**
 * A lease is identified by its id as well as its token, so a token number
 * that a promoted replica re-issues (it missed the grant) never passes for
 * another holder's lease. The re-issue is simulated by writing the stored
 * grant directly, as the promoted node would hold it.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
const redis = privateRedisServer()
const backend = (namespace: string) => redis.backend(namespace)

describe('lease identity', () => {
  it('a grant carries an id that names its token', async () => {
    const b = backend('id-shape')
    const lease = await b.acquireLease('k', { holder: 'a', ttlMs: 60_000 })
    expect(lease.leaseId).toMatch(new RegExp(`^${lease.token}:[A-Za-z0-9_-]{8,}$`))
    const renewed = await b.renewLease(lease)
    expect(renewed.leaseId).toBe(lease.leaseId)
    // getLease is a view: it never hands out the id that authorizes writes.
    expect((await b.getLease('k'))?.leaseId).toBeUndefined()
  })

  it('a re-issued token number with another id refuses the stale holder', async () => {
    const b = backend('reissued')
    const layout = redisKeyLayout('as', 'reissued')
    const stale = await b.acquireLease('k', { holder: 'old', ttlMs: 60_000 })
    await b.put('k', bytes('by old'), { lease: stale })
    // The promoted node granted the same number to someone else.
    const newId = `${stale.token}:someoneelse`
    await redisCli(redis.server().port, ['HSET', layout.record('k'), 'lh', 'new', 'li', newId])
    expect(await errorCodeOf(b.put('k', bytes('stale'), { lease: stale }))).toBe('LEASE_LOST')
    expect(await errorCodeOf(b.delete('k', { lease: stale }))).toBe('LEASE_LOST')
    expect(await errorCodeOf(b.renewLease(stale))).toBe('LEASE_LOST')
    expect(await b.releaseLease(stale)).toBe(false)
    // The new holder's lease and the value are intact.
    expect(await b.getLease('k')).toMatchObject({ holder: 'new', token: stale.token })
    expect(new TextDecoder().decode((await b.get('k'))?.value)).toBe('by old')
    const current: Lease = { ...stale, holder: 'new', leaseId: newId }
    await b.put('k', bytes('by new'), { lease: current })
    expect(await b.releaseLease(current)).toBe(true)
  })

  it('a lease object without its id is refused for a grant that has one', async () => {
    const b = backend('no-id')
    const lease = await b.acquireLease('k', { holder: 'a', ttlMs: 60_000 })
    const { leaseId: _dropped, ...bare } = lease
    expect(await errorCodeOf(b.put('k', bytes('x'), { lease: bare }))).toBe('LEASE_LOST')
    expect(await errorCodeOf(b.renewLease(bare))).toBe('LEASE_LOST')
    expect(await b.releaseLease(bare)).toBe(false)
    expect(await b.releaseLease(lease)).toBe(true)
  })

  it('a lease granted by 0.1/0.2 scripts (no id) is judged by its token; new tokens pass its counter', async () => {
    const b = backend('legacy-lease')
    const layout = redisKeyLayout('as', 'legacy-lease')
    const far = String(Date.now() + 600_000)
    // As 0.1's acquire left it, including an id left over from an older grant.
    await redisCli(redis.server().port, [
      'HSET',
      layout.record('k'),
      'lh',
      'legacy',
      'lt',
      '7',
      'lttl',
      '600000',
      'le',
      far,
      'n',
      '7',
      'li',
      '3:leftover',
    ])
    const legacy: Lease = { key: 'k', holder: 'legacy', token: 7, ttlMs: 600_000, expiresAt: 0 }
    expect(await errorCodeOf(b.put('k', bytes('x')))).toBe('LEASE_HELD')
    await b.put('k', bytes('fenced'), { lease: legacy })
    expect((await b.renewLease(legacy)).token).toBe(7)
    expect(await b.releaseLease(legacy)).toBe(true)
    const next = await b.acquireLease('k', { holder: 'new', ttlMs: 60_000 })
    expect(next.token).toBeGreaterThan(7)
    expect(Number.isSafeInteger(next.token)).toBe(true)
  })

  it('tokens are floored by server time in microseconds and stay safe integers', async () => {
    const b = backend('time-floor')
    const [secs, micros] = (await redisCli(redis.server().port, ['TIME']))
      .trim()
      .split('\n')
      .map(Number)
    const before = (secs ?? 0) * 1_000_000 + (micros ?? 0)
    const lease = await b.acquireLease('k', { holder: 'a', ttlMs: 60_000 })
    expect(lease.token).toBeGreaterThanOrEqual(before)
    expect(Number.isSafeInteger(lease.token)).toBe(true)
    await b.releaseLease(lease)
    expect((await b.acquireLease('k', { holder: 'b', ttlMs: 60_000 })).token).toBeGreaterThan(
      lease.token,
    )
  })
})
