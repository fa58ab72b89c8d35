import type { Backend } from '@agent-state/core'
import { type RedisServer, redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisBackend, redisKeyLayout } from '../src/index.js'
import { failureOf, sleep } from './replica-pair.js'

/** Durable acknowledgement (`replication`) on a real primary and replica. */

const bytes = (text: string) => new TextEncoder().encode(text)
let primary: RedisServer
let replica: RedisServer
const opened: Backend[] = []

function backend(namespace: string, replicas = 1): Backend {
  const created = createRedisBackend({
    port: primary.port,
    namespace,
    // Generous: other files of this suite load the machine (the failover tier) while this runs.
    replication: { replicas, timeoutMs: 2000 },
  })
  opened.push(created)
  return created
}

beforeAll(async () => {
  primary = await startRedisServer()
  replica = await startRedisServer({
    extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
  })
  const deadline = Date.now() + 15_000
  while (
    !(await redisCli(replica.port, ['INFO', 'replication'])).includes('master_link_status:up')
  ) {
    if (Date.now() > deadline) throw new Error('the replica never linked')
    await sleep(50)
  }
  // Linked is not yet acknowledging: right after the initial sync the replica's first
  // acknowledgements can be slow. Ready means
  // one write confirmed by WAIT within that time.
  for (;;) {
    await redisCli(primary.port, ['SET', 'replica-ready', String(Date.now())])
    if ((await redisCli(primary.port, ['WAIT', '1', '2000'])).trim() === '1') break
    if (Date.now() > deadline) throw new Error('the replica never acknowledged a write')
    await sleep(50)
  }
}, 60_000)
// On SIGTERM a Redis 7 primary waits up to `shutdown-timeout` (10 s) for lagging replicas.
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()))
  await Promise.all([primary.stop(), replica.stop()])
}, 60_000)

describe('replication: WAIT after every mutating script', () => {
  it('a confirmed write is on the replica when it resolves', async () => {
    const b = backend('confirmed')
    const record = redisKeyLayout('as', 'confirmed').record('k')
    for (let i = 0; i < 20; i++) {
      const meta = await b.put('k', bytes(`v${i}`))
      // Read on the replica right away: WAIT made the primary wait for it.
      expect((await redisCli(replica.port, ['HGET', record, 'v'])).trim()).toBe(meta.version)
    }
    const lease = await b.acquireLease('k', { holder: 'h', ttlMs: 60_000 })
    expect((await redisCli(replica.port, ['HGET', record, 'li'])).trim()).toBe(lease.leaseId)
    await b.renewLease(lease)
    expect(await b.releaseLease(lease)).toBe(true)
    expect(await b.delete('k')).toBe(true)
  })

  it('a fenced put is confirmed like a plain one; a stale fence is refused without confirmation', async () => {
    const b = backend('fenced')
    const record = redisKeyLayout('as', 'fenced').record('k')
    const fence = await b.acquireLease('owner', { holder: 'h', ttlMs: 60_000 })
    for (let i = 0; i < 5; i++) {
      const meta = await b.put('k', bytes(`v${i}`), { fence })
      expect((await redisCli(replica.port, ['HGET', record, 'v'])).trim()).toBe(meta.version)
    }
    const tooFew = backend('fenced', 2)
    expect(await failureOf(tooFew.put('k', bytes('x'), { fence }))).toMatchObject({
      code: 'INDETERMINATE',
      context: { acked: 1, required: 2 },
    })
    expect(await b.releaseLease(fence)).toBe(true)
    expect((await failureOf(tooFew.put('k', bytes('y'), { fence }))).code).toBe('LEASE_LOST')
    expect(new TextDecoder().decode((await b.get('k'))?.value)).toBe('x')
  })

  it('fewer confirmations than required is INDETERMINATE, never success', async () => {
    const b = backend('too-few', 2)
    const result = await failureOf(b.put('k', bytes('x')))
    expect(result).toMatchObject({ code: 'INDETERMINATE', context: { acked: 1, required: 2 } })
  })

  it('with the replica frozen every mutating operation is INDETERMINATE; refusals stay refusals', async () => {
    const b = backend('frozen')
    await b.put('held', bytes('v'))
    const lease = await b.acquireLease('leased', { holder: 'h', ttlMs: 60_000 })
    const pid = replica.pid
    if (pid === undefined) throw new Error('replica not running')
    process.kill(pid, 'SIGSTOP')
    try {
      expect((await failureOf(b.put('k', bytes('x')))).code).toBe('INDETERMINATE')
      expect((await failureOf(b.delete('held'))).code).toBe('INDETERMINATE')
      expect((await failureOf(b.acquireLease('other', { holder: 'h', ttlMs: 60_000 }))).code).toBe(
        'INDETERMINATE',
      )
      expect((await failureOf(b.renewLease(lease))).code).toBe('INDETERMINATE')
      expect((await failureOf(b.releaseLease(lease))).code).toBe('INDETERMINATE')
      // Nothing written: no confirmation is needed to report the refusal.
      expect((await failureOf(b.put('k', bytes('y'), { ifNoneMatch: '*' }))).code).toBe(
        'PRECONDITION_FAILED',
      )
    } finally {
      process.kill(pid, 'SIGCONT')
    }
  })
})
