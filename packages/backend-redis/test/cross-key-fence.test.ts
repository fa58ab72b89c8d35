import { createHash } from 'node:crypto'
import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { redisCli } from '@agent-state/test-services'
import { describe, expect, it } from 'vitest'
import { createRedisBackend, redisKeyLayout } from '../src/index.js'
import { FENCED_PUT, PUT } from '../src/lua-scripts.js'
import { privateRedisServer } from './private-server.js'
import { type ScriptMutant, withScriptMutant } from './script-mutant.js'

/**
 * `PutOptions.fence` on a real redis-server: a write fenced by another key's
 * lease, judged in the same script as the write (FENCED_PUT) on the server's
 * clock, by token and lease id, never by holder name. Every refusal is read
 * back: nothing was stored.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (value: Uint8Array | undefined) =>
  value === undefined ? undefined : new TextDecoder().decode(value)
const redis = privateRedisServer()
const backend = (namespace: string) => redis.backend(namespace)

/** The server's clock in milliseconds, as the scripts read it (`TIME`). */
async function serverNow(): Promise<number> {
  const [seconds, micros] = await redis.raw().time()
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}

/** The value stored under `key`, as text (`undefined`: none). */
async function stored(b: Backend, key: string): Promise<string | undefined> {
  return text((await b.get(key))?.value)
}

describe('cross-key fence (redis)', () => {
  it('claims crossKeyFence', () => {
    expect(backend('caps').capabilities.crossKeyFence).toBe(true)
  })

  it('a live fence writes, and leaves the fence key as it was', async () => {
    const b = backend('live')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    const meta = await b.put('record', bytes('one'), { fence })
    expect(meta).toMatchObject({ key: 'record', size: 3 })
    expect(await b.head('record')).toMatchObject({ version: meta.version })
    expect(await stored(b, 'record')).toBe('one')
    // A fenced compare-and-set and a fenced create.
    await b.put('record', bytes('two'), { fence, ifMatch: meta.version })
    await b.put('fresh', bytes('new'), { fence, ifNoneMatch: '*' })
    expect(await stored(b, 'record')).toBe('two')
    expect(await stored(b, 'fresh')).toBe('new')
    // The fence key got no value, and its lease is untouched.
    expect(await b.get('owner')).toBeNull()
    expect(await b.getLease('owner')).toMatchObject({
      holder: 'alice',
      token: fence.token,
      expiresAt: fence.expiresAt,
    })
    expect((await b.list()).entries.map((e) => e.key)).toEqual(['fresh', 'record'])
  })

  it('a released fence is LEASE_LOST, with the fence named, and nothing stored', async () => {
    const b = backend('released')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    await b.put('record', bytes('kept'), { fence })
    expect(await b.releaseLease(fence)).toBe(true)
    await expect(b.put('record', bytes('stale'), { fence })).rejects.toMatchObject({
      code: 'LEASE_LOST',
      context: {
        key: 'record',
        fenceKey: 'owner',
        token: fence.token,
        // Released: the fence key has no lease at all.
        currentToken: null,
      },
    })
    await expect(b.put('other', bytes('stale'), { fence })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    expect(await stored(b, 'record')).toBe('kept')
    expect(await b.get('other')).toBeNull()
  })

  it('re-acquired by the same holder name: the old token is LEASE_LOST, the new one writes', async () => {
    await staleTokenRefused(backend('same-holder'))
  })

  it('judges token and lease id as a given lease is judged: a copy without the id, or with another, is LEASE_LOST', async () => {
    const b = backend('lease-id')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    const { leaseId: _dropped, ...withoutId } = fence
    await expect(b.put('record', bytes('x'), { fence: withoutId })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    const forged: Lease = { ...fence, leaseId: `${fence.token}:someoneelse` }
    await expect(b.put('record', bytes('x'), { fence: forged })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    // A token one off, with the right id, is not the lease either.
    const offByOne: Lease = { ...fence, token: fence.token + 1 }
    await expect(b.put('record', bytes('x'), { fence: offByOne })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    expect(await b.get('record')).toBeNull()
    // A fence on a key that never had a lease fences nothing.
    await expect(
      b.put('record', bytes('x'), { fence: { ...fence, key: 'never-leased' } }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST', context: { currentToken: null } })
    expect(await b.get('record')).toBeNull()
    await b.put('record', bytes('ok'), { fence })
    expect(await stored(b, 'record')).toBe('ok')
  })

  it('expires on the server clock: live before expiresAt, LEASE_LOST from expiresAt on', async () => {
    const b = backend('expiry')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 500 })
    let lastWritten: string | undefined
    let refused = 0
    for (let attempt = 0; refused < 3; attempt++) {
      if (attempt > 10_000) throw new Error('the fence never expired')
      // The script's clock reading lies between these two readings of the same clock.
      const before = await serverNow()
      const value = `attempt ${attempt}`
      const outcome = await b.put('record', bytes(value), { fence }).then(
        () => 'written' as const,
        (error: unknown) => {
          if (isAgentStateError(error, 'LEASE_LOST')) return 'lost' as const
          throw error
        },
      )
      const after = await serverNow()
      if (outcome === 'written') {
        lastWritten = value
        // Written: the script ran before expiresAt.
        expect(before).toBeLessThan(fence.expiresAt)
      } else {
        refused++
        // Refused: the script ran at or after expiresAt.
        expect(after).toBeGreaterThanOrEqual(fence.expiresAt)
      }
      if (after < fence.expiresAt) expect(outcome).toBe('written')
      if (before >= fence.expiresAt) expect(outcome).toBe('lost')
    }
    expect(lastWritten).toBeDefined()
    expect(await stored(b, 'record')).toBe(lastWritten)
    // The stored lease is expired, not removed: the refusal says which token it was.
    await expect(b.put('record', bytes('late'), { fence })).rejects.toMatchObject({
      code: 'LEASE_LOST',
      context: { currentToken: fence.token },
    })
    expect(await stored(b, 'record')).toBe(lastWritten)
  })

  it('another backend instance taking the fence key over makes the first one LEASE_LOST', async () => {
    const first = backend('takeover')
    const second = backend('takeover')
    // Long enough for the steps before the takeover on a loaded machine, short enough to wait out.
    const fence = await first.acquireLease('owner', { holder: 'worker', ttlMs: 1000 })
    await first.put('record', bytes('by first'), { fence })
    // While the lease lives, the other instance cannot take it: LEASE_HELD, not a takeover.
    await expect(
      second.acquireLease('owner', { holder: 'worker', ttlMs: 60_000 }),
    ).rejects.toMatchObject({ code: 'LEASE_HELD' })
    while ((await serverNow()) < fence.expiresAt) await new Promise((r) => setTimeout(r, 10))
    const taken = await second.acquireLease('owner', { holder: 'worker', ttlMs: 60_000 })
    await expect(first.put('record', bytes('stale'), { fence })).rejects.toMatchObject({
      code: 'LEASE_LOST',
      context: { fenceKey: 'owner', token: fence.token, currentToken: taken.token },
    })
    expect(await stored(second, 'record')).toBe('by first')
    await second.put('record', bytes('by second'), { fence: taken })
    expect(await stored(first, 'record')).toBe('by second')
  })

  it('checks the fence first, then the written key own lease, then the precondition', async () => {
    const b = backend('order')
    const stale = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    await b.releaseLease(stale)
    const live = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    const meta = await b.put('record', bytes('v1'), { fence: live })

    // Stale fence and failing precondition: the fence decides.
    await expect(
      b.put('record', bytes('x'), { fence: stale, ifMatch: `${meta.version}x` }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST', context: { fenceKey: 'owner' } })
    await expect(
      b.put('record', bytes('x'), { fence: stale, ifNoneMatch: '*' }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' })
    // Live fence and failing precondition: PRECONDITION_FAILED with the current meta.
    await expect(
      b.put('record', bytes('x'), { fence: live, ifMatch: `${meta.version}x` }),
    ).rejects.toMatchObject({
      code: 'PRECONDITION_FAILED',
      context: { key: 'record', current: { version: meta.version, size: 2 } },
    })
    await expect(
      b.put('record', bytes('x'), { fence: live, ifNoneMatch: '*' }),
    ).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' })

    // The written key's own live lease: a fence is not that lease.
    const own = await b.acquireLease('record', { holder: 'bob', ttlMs: 60_000 })
    await expect(b.put('record', bytes('x'), { fence: live })).rejects.toMatchObject({
      code: 'LEASE_HELD',
      context: { key: 'record', holder: 'bob', expiresAt: own.expiresAt },
    })
    await expect(
      b.put('record', bytes('x'), { fence: live, ifMatch: `${meta.version}x` }),
    ).rejects.toMatchObject({ code: 'LEASE_HELD' })
    await expect(b.put('record', bytes('x'), { fence: stale })).rejects.toMatchObject({
      code: 'LEASE_LOST',
      context: { fenceKey: 'owner' },
    })
    expect(await b.head('record')).toMatchObject({ version: meta.version })
    expect(await stored(b, 'record')).toBe('v1')

    await b.releaseLease(own)
    await b.put('record', bytes('v2'), { fence: live, ifMatch: meta.version })
    expect(await stored(b, 'record')).toBe('v2')
  })

  it('keeps a namespace apart: a lease of the same key in another namespace fences nothing here', async () => {
    const here = backend('ns-here')
    const there = backend('ns-there')
    const fence = await there.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    await expect(here.put('record', bytes('x'), { fence })).rejects.toMatchObject({
      code: 'LEASE_LOST',
      context: { currentToken: null },
    })
    expect(await here.get('record')).toBeNull()
    expect(await there.get('record')).toBeNull()
  })

  it('arguments are refused before anything is sent', async () => {
    const b = backend('arguments')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    const own = await b.acquireLease('record', { holder: 'alice', ttlMs: 60_000 })
    await expect(b.put('owner', bytes('x'), { fence })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(b.put('record', bytes('x'), { fence, lease: own })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
    })
    await expect(
      b.put('record', bytes('x'), { fence: { ...fence, key: 'bad//key' } }),
    ).rejects.toMatchObject({ code: 'INVALID_KEY' })
    expect(await b.get('owner')).toBeNull()
    expect(await b.get('record')).toBeNull()
  })

  it('reloads the fenced script after SCRIPT FLUSH (NOSCRIPT)', async () => {
    const b = backend('noscript')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    await b.put('record', bytes('1'), { fence })
    await redisCli(redis.server().port, ['SCRIPT', 'FLUSH'])
    await b.put('record', bytes('2'), { fence })
    expect(await stored(b, 'record')).toBe('2')
  })

  it('a fenced put costs one HMGET more than a plain put, and a plain put runs its script unchanged', async () => {
    const b = backend('costs')
    const layout = redisKeyLayout('as', 'costs')
    const fence = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
    await b.put('record', bytes('v0'), { fence })
    await b.put('plain', bytes('v0'))
    // Two scripts, each named by the SHA of its own text.
    expect(FENCED_PUT.source).not.toBe(PUT.source)
    expect(await redis.raw().script('EXISTS', sha1(PUT.source), sha1(FENCED_PUT.source))).toEqual([
      1, 1,
    ])

    const count = async (step: () => Promise<unknown>) => {
      await redis.raw().config('RESETSTAT')
      await step()
      const info = await redis.raw().info('commandstats')
      const calls: Record<string, number> = {}
      for (const match of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+),/gm)) {
        calls[match[1] as string] = Number(match[2])
      }
      // The counting's own commands.
      delete calls.info
      delete calls['config|resetstat']
      return calls
    }
    expect(await count(() => b.put('plain', bytes('v1')))).toEqual({
      evalsha: 1,
      hmget: 1,
      time: 1,
      hset: 1,
      spublish: 1,
    })
    expect(await count(() => b.put('record', bytes('v1'), { fence }))).toEqual({
      evalsha: 1,
      hmget: 2,
      time: 1,
      hset: 1,
      spublish: 1,
    })
    // A refused fenced put writes nothing and publishes nothing.
    await b.releaseLease(fence)
    expect(
      await count(() =>
        expect(b.put('record', bytes('v2'), { fence })).rejects.toMatchObject({
          code: 'LEASE_LOST',
        }),
      ),
    ).toEqual({ evalsha: 1, hmget: 2, time: 1 })
    expect(await redis.raw().hget(layout.record('record'), 'd')).toBe('v1')
  })

  for (const { name, mutant } of MUTANTS) {
    it(`catches the mutant: ${name}`, async () => {
      const outcome = await withScriptMutant(mutant, async () => {
        const b = createRedisBackend({
          port: redis.server().port,
          namespace: `mutant-${name.length}`,
        })
        try {
          return await staleTokenRefused(b).then(
            () => 'passed',
            (error: unknown) => (error instanceof Error ? error.message : String(error)),
          )
        } finally {
          await b.close()
        }
      })
      // The check fails on the mutant: a stale token wrote, or LEASE_LOST never came.
      expect(outcome).not.toBe('passed')
      expect(outcome).toMatch(/instead of rejecting|expected/)
    })
  }
})

/**
 * The fence key released and re-acquired by the same holder name: the old
 * token writes nothing (LEASE_LOST naming the new token), the new one writes.
 */
async function staleTokenRefused(b: Backend): Promise<void> {
  const first = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
  await b.put('record', bytes('first'), { fence: first })
  await b.releaseLease(first)
  const second = await b.acquireLease('owner', { holder: 'alice', ttlMs: 60_000 })
  expect(second.token).toBeGreaterThan(first.token)
  await expect(b.put('record', bytes('stale'), { fence: first })).rejects.toMatchObject({
    code: 'LEASE_LOST',
    context: { fenceKey: 'owner', token: first.token, currentToken: second.token },
  })
  expect(await stored(b, 'record')).toBe('first')
  await b.put('record', bytes('second'), { fence: second })
  expect(await stored(b, 'record')).toBe('second')
}

/** Mutants of FENCED_PUT that the same-holder check must catch. */
const MUTANTS: readonly { name: string; mutant: ScriptMutant }[] = [
  {
    name: 'the fence is judged by a lease being there, not by its token and id',
    mutant: {
      script: FENCED_PUT,
      from: 'if (not same_lease(g[1], g[3], ARGV[10], ARGV[11])) or',
      to: 'if (not g[1]) or',
    },
  },
  {
    name: 'a stale fence is not refused',
    mutant: {
      script: FENCED_PUT,
      from: "return {'FENCE_LOST', g[1] or ''}",
      to: '',
    },
  },
]

function sha1(source: string): string {
  return createHash('sha1').update(source).digest('hex')
}
