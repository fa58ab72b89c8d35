import { type Backend, isAgentStateError, openBackend } from '@agent-state/core'
import {
  freePort,
  type RedisSentinel,
  type RedisServer,
  redisCli,
  startRedisSentinel,
} from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createRedisBackend, redisKeyLayout } from '../src/index.js'
import { withPlanMutant } from './connection-mutants.js'
import { sleep, startReplicaPair, until } from './replica-pair.js'

/**
 * Sentinel on real processes: a primary, a replica and one Sentinel (quorum 1).
 * The primary is frozen; Sentinel promotes the replica; the same backend
 * instance finds the new primary by itself.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
let primary: RedisServer
let replica: RedisServer
let sentinel: RedisSentinel
const opened: Backend[] = []

beforeAll(async () => {
  ;({ primary, replica } = await startReplicaPair())
  sentinel = await startRedisSentinel({ primaryPort: primary.port })
  // Sentinel learns the replica from the primary's INFO.
  await until('Sentinel to see the replica', async () =>
    (await redisCli(sentinel.port, ['SENTINEL', 'REPLICAS', sentinel.name])).includes(
      String(replica.port),
    ),
  )
}, 60_000)
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()))
  const pid = primary.pid
  if (pid !== undefined) process.kill(pid, 'SIGKILL')
  await Promise.all([sentinel.stop(), primary.stop(), replica.stop()])
})

describe('Sentinel', () => {
  it('refuses sentinel with cluster', () => {
    let code = 'none'
    try {
      createRedisBackend({
        sentinel: { nodes: [{ host: '127.0.0.1', port: 1 }], name: 'x' },
        cluster: { nodes: [{ host: '127.0.0.1', port: 2 }] },
      })
    } catch (error) {
      code = isAgentStateError(error) ? error.code : 'raw'
    }
    expect(code).toBe('INVALID_ARGUMENT')
  })

  it('opens from a redis+sentinel:// URL through openBackend, on the current primary', async () => {
    const url = `redis+sentinel://${sentinel.host}:${sentinel.port}/${sentinel.name}/0?commandTimeoutMs=2000`
    const b = await openBackend(url, { namespace: 'sentinel-url' })
    opened.push(b)
    const written = await b.put('via-url', bytes('v'))
    const layout = redisKeyLayout('as', 'sentinel-url')
    expect((await redisCli(primary.port, ['HGET', layout.record('via-url'), 'v'])).trim()).toBe(
      written.version,
    )
  }, 60_000)

  it('an unreachable Sentinel in the list prints nothing (its errors stay with the backend)', async () => {
    const printed = vi.spyOn(console, 'error')
    try {
      const nowhere = await freePort()
      const b = createRedisBackend({
        sentinel: {
          nodes: [
            { host: '127.0.0.1', port: nowhere },
            { host: sentinel.host, port: sentinel.port },
          ],
          name: sentinel.name,
        },
        namespace: 'sentinel-unreachable',
      })
      opened.push(b)
      await b.put('k', bytes('v'))
      // The failover detector subscribes to every Sentinel after connecting, and ioredis
      // retries an unreachable one every second: long enough for two attempts.
      await sleep(2500)
      await b.put('k', bytes('v2'))
      const unhandled = printed.mock.calls.filter((call) =>
        call.some((part) => String(part).includes('Unhandled error event')),
      )
      expect(unhandled).toEqual([])
    } finally {
      printed.mockRestore()
    }
  }, 60_000)

  it('with replication, one connection for reads and writes (a read never reaches a primary its writes left); its mutant opens the single-server pool', async () => {
    /** Client connections on the primary that are neither replicas, Sentinels nor this count's own. */
    const clients = async () =>
      (await redisCli(primary.port, ['CLIENT', 'LIST']))
        .split('\n')
        .filter((line) => line.includes(' cmd=') && !/flags=\w*S/.test(line))
        .filter((line) => !/name=sentinel-/.test(line) && !line.includes('cmd=client')).length
    /** Connections a backend behind Sentinel with `replication` opens for 16 concurrent writers and readers. */
    const opens = async (create: typeof createRedisBackend, namespace: string) => {
      const before = await clients()
      const b = create({
        sentinel: { nodes: [{ host: sentinel.host, port: sentinel.port }], name: sentinel.name },
        namespace,
        replication: { replicas: 1, timeoutMs: 2000 },
        commandTimeoutMs: 5000,
      })
      try {
        await Promise.all(
          Array.from({ length: 16 }, async (_, i) => {
            await b.put(`k${i}`, bytes('v'))
            await b.get(`k${(i + 1) % 16}`)
          }),
        )
        return (await clients()) - before
      } finally {
        await b.close()
      }
    }
    expect(await opens(createRedisBackend, 'sentinel-one-connection')).toBe(1)
    const mutant = await withPlanMutant(() => ({ readsApart: true, writers: 4 }))
    try {
      expect(await opens(mutant.createRedisBackend, 'sentinel-pool-mutant')).toBeGreaterThan(1)
    } finally {
      vi.doUnmock('../src/connection-pool.js')
      vi.resetModules()
    }
  }, 60_000)

  it('finds the primary, and the new one after a failover, where the promotion hold engages', async () => {
    const holdMs = 2000
    const b = createRedisBackend({
      sentinel: { nodes: [{ host: sentinel.host, port: sentinel.port }], name: sentinel.name },
      namespace: 'sentinel',
      commandTimeoutMs: 1000,
      connectTimeoutMs: 2000,
      maxLeaseTtlMs: holdMs,
    })
    opened.push(b)
    const layout = redisKeyLayout('as', 'sentinel')
    const before = await b.put('before', bytes('v1'))
    expect((await redisCli(primary.port, ['HGET', layout.record('before'), 'v'])).trim()).toBe(
      before.version,
    )
    await until(
      'the write to replicate',
      async () =>
        (await redisCli(replica.port, ['EXISTS', layout.record('before')])).trim() === '1',
    )
    const pid = primary.pid
    if (pid === undefined) throw new Error('primary not running')
    process.kill(pid, 'SIGSTOP')
    // The frozen primary fails each operation within the command timeout; then Sentinel switches.
    const codes = new Set<string>()
    let after: Awaited<ReturnType<Backend['put']>> | undefined
    const deadline = Date.now() + 60_000
    while (after === undefined) {
      try {
        after = await b.put('after', bytes('v2'))
      } catch (error) {
        if (!isAgentStateError(error) || Date.now() > deadline) throw error
        codes.add(error.code)
        await sleep(100)
      }
    }
    expect(codes.size).toBeGreaterThan(0)
    expect([...codes].every((code) => code === 'INDETERMINATE' || code === 'UNAVAILABLE')).toBe(
      true,
    )
    // The same instance now writes to the promoted replica.
    expect((await redisCli(replica.port, ['ROLE'])).split('\n')[0]?.trim()).toBe('master')
    expect((await redisCli(replica.port, ['HGET', layout.record('after'), 'v'])).trim()).toBe(
      after.version,
    )
    expect((await b.get('before'))?.meta.version).toBe(before.version)
    // The same instance, now on the promoted node, grants no lease until the hold is over.
    let refusal: unknown
    try {
      await b.acquireLease('lock', { holder: 'h', ttlMs: holdMs })
    } catch (error) {
      refusal = error
    }
    expect(refusal).toMatchObject({ code: 'LEASE_HELD', context: { promotionHold: true } })
    const holdUntil = (refusal as { context: { expiresAt: number } }).context.expiresAt
    let lease: Awaited<ReturnType<Backend['acquireLease']>> | undefined
    while (lease === undefined) {
      try {
        lease = await b.acquireLease('lock', { holder: 'h', ttlMs: holdMs })
      } catch (error) {
        if (!isAgentStateError(error, 'LEASE_HELD') || Date.now() > deadline) throw error
        await sleep(50)
      }
    }
    // Granted on the promoted node's clock after the hold's end, not before.
    expect(lease.expiresAt - holdMs).toBeGreaterThanOrEqual(holdUntil)
  }, 120_000)
})
