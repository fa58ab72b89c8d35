import type { Backend } from '@agent-state/core'
import {
  type RedisServer,
  redisCli,
  startRedisServer,
  startTcpProxy,
  type TcpProxy,
} from '@agent-state/test-services'
import type { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { WRITE_CONNECTIONS } from '../src/connection-pool.js'
import type * as BackendModule from '../src/index.js'
import type * as SharedWaitModule from '../src/shared-wait.js'
import {
  withSharedWaitMutant as mutated,
  readBesideBlockedWrite,
  waitPerWrite,
  withPlanMutant,
} from './connection-mutants.js'
import { failureOf, sleep, until } from './replica-pair.js'

/**
 * The shared `WAIT` of `replication` (`shared-wait.ts`) on a real primary and a
 * replica linked through a TCP proxy (delay and cuts on the replica's link):
 * concurrent writers share WAITs (counted with `INFO commandstats`), each
 * write's outcome is its own, and a write is never confirmed by a WAIT written
 * before its script. And the connections around it (`connection-pool.ts`):
 * reads never wait behind a `WAIT`, and a write issued while a `WAIT` is in
 * flight runs at once on another write connection. Committed mutants (loaded
 * with `vi.doMock`) prove each check.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
let primary: RedisServer
let replica: RedisServer
let link: TcpProxy
const opened: Backend[] = []

type Module = typeof BackendModule
type SharedWaitFactory = typeof SharedWaitModule.createSharedWait

function open(
  module: Module,
  namespace: string,
  replication = { replicas: 1, timeoutMs: 3000 },
): Backend {
  const created = module.createRedisBackend({ port: primary.port, namespace, replication })
  opened.push(created)
  return created
}

/** The backend module as shipped. */
const real = (): Promise<Module> => import('../src/index.js')

/**
 * Mutant: a write joins the WAIT already in flight when its script is written
 * (a WAIT issued before its script), instead of the next one.
 */
const joinsWaitInFlight =
  (original: SharedWaitFactory): SharedWaitFactory =>
  (client: Redis, replication) => {
    const shared = original(client, replication)
    let inFlight: Promise<number> | undefined
    const wait = client.wait.bind(client)
    ;(client as { wait: unknown }).wait = (replicas: number, timeoutMs: number) => {
      const sent = wait(replicas, timeoutMs)
      const current = sent.then(Number, () => 0)
      inFlight = current
      void current.then(() => {
        if (inFlight === current) inFlight = undefined
      })
      return sent
    }
    return { afterWrite: () => inFlight ?? shared.afterWrite(), state: () => shared.state() }
  }

/** `WAIT` commands the primary ran so far. */
async function waitCalls(): Promise<number> {
  const info = await redisCli(primary.port, ['INFO', 'commandstats'])
  return Number(/cmdstat_wait:calls=(\d+)/.exec(info)?.[1] ?? '0')
}

/** Until the replica, linked again, acknowledges a write within 2 s. */
async function linkAcknowledges(): Promise<void> {
  await until(
    'the replica to acknowledge',
    async () => {
      await redisCli(primary.port, ['SET', 'replica-ready', String(Date.now())])
      return (await redisCli(primary.port, ['WAIT', '1', '2000'])).trim() === '1'
    },
    30_000,
  )
}

beforeAll(async () => {
  primary = await startRedisServer()
  link = await startTcpProxy({ target: { host: '127.0.0.1', port: primary.port } })
  replica = await startRedisServer({
    extraArgs: ['--replicaof', '127.0.0.1', String(link.port)],
  })
  await linkAcknowledges()
}, 60_000)
afterEach(async () => {
  vi.doUnmock('../src/shared-wait.js')
  vi.doUnmock('../src/connection-pool.js')
  vi.resetModules()
  await Promise.all(opened.splice(0).map((b) => b.close()))
})
afterAll(async () => {
  await link?.stop()
  await Promise.all([primary?.stop(), replica?.stop()])
}, 60_000)

/** 16 workers, `rounds` puts each, on a 1 ms replica link: the WAITs the primary ran. */
async function waitsAtSixteen(module: Module, namespace: string, rounds: number): Promise<number> {
  const b = open(module, namespace)
  await b.put('warm', bytes('w'))
  link.setDelay(1)
  try {
    const before = await waitCalls()
    await Promise.all(
      Array.from({ length: 16 }, async (_, worker) => {
        for (let i = 0; i < rounds; i++) await b.put(`w${worker}`, bytes(`v${i}`))
      }),
    )
    return (await waitCalls()) - before
  } finally {
    link.setDelay(0)
  }
}

/**
 * Write `a`, then one write per other pool connection, each while the
 * WAITs before it are in flight (400 ms each way on the replica link), so
 * every write connection has a WAIT in flight; then `b`, which goes behind
 * a's (the oldest). Cut the link the moment `a` is confirmed: b's bytes
 * are still in the proxy, so only a WAIT issued before b's script could
 * confirm it. Returns how b settled.
 */
async function writtenDuringWait(module: Module, namespace: string) {
  const b = open(module, namespace)
  await b.put('warm', bytes('w'))
  link.setDelay(400)
  try {
    const first = b.put('a', bytes('a'))
    const others: Promise<unknown>[] = []
    for (let i = 1; i < WRITE_CONNECTIONS; i++) {
      await sleep(50)
      others.push(failureOf(b.put(`a${i}`, bytes('a'))))
    }
    await sleep(50)
    const second = failureOf(b.put('b', bytes('b')))
    await first
    await link.setRefusing(true)
    link.dropAll()
    await Promise.all(others)
    return await second
  } finally {
    link.setDelay(0)
    await link.setRefusing(false)
    await linkAcknowledges()
  }
}

describe('replication: one shared WAIT per round', () => {
  it('16 concurrent writers share WAITs: at most one per four writes (one per write before)', async () => {
    const writes = 16 * 10
    const waits = await waitsAtSixteen(await real(), 'count', 10)
    expect(waits).toBeGreaterThan(0)
    expect(waits).toBeLessThanOrEqual(writes / 4)
  })

  it('mutant (a WAIT per write) fails the count', async () => {
    const waits = await waitsAtSixteen(await mutated(waitPerWrite), 'count-mutant', 10)
    expect(waits).toBeGreaterThan((16 * 10) / 4)
  })

  it("each write's outcome is its own, in one shared round", async () => {
    const module = await real()
    const b = open(module, 'own')
    for (let i = 0; i < 8; i++) await b.put(`taken${i}`, bytes('v'))
    const lease = await b.acquireLease('leased', { holder: 'h', ttlMs: 60_000 })
    const outcomes = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => failureOf(b.put(`fresh${i}`, bytes('x')))),
      ...Array.from({ length: 8 }, (_, i) =>
        failureOf(b.put(`taken${i}`, bytes('x'), { ifNoneMatch: '*' })),
      ),
      failureOf(b.acquireLease('leased', { holder: 'other', ttlMs: 60_000 })),
      b.releaseLease({ ...lease, leaseId: 'not-the-lease' }),
    ])
    expect(outcomes).toEqual([
      ...Array.from({ length: 8 }, () => ({ code: 'resolved', context: null })),
      ...Array.from({ length: 8 }, () => expect.objectContaining({ code: 'PRECONDITION_FAILED' })),
      expect.objectContaining({ code: 'LEASE_HELD' }),
      false,
    ])
    // Each confirmed write is on the replica; each refused one left the old value.
    const layout = module.redisKeyLayout('as', 'own')
    for (let i = 0; i < 8; i++) {
      expect(
        (await redisCli(replica.port, ['HEXISTS', layout.record(`fresh${i}`), 'v'])).trim(),
      ).toBe('1')
    }
    // And a write that needs more replicas than exist fails alone, on its own connection.
    const strict = open(module, 'own', { replicas: 2, timeoutMs: 300 })
    const [loose, tight] = await Promise.all([
      failureOf(b.put('loose', bytes('x'))),
      failureOf(strict.put('tight', bytes('x'))),
    ])
    expect(loose.code).toBe('resolved')
    expect(tight).toMatchObject({ code: 'INDETERMINATE', context: { acked: 1, required: 2 } })
  })

  it('a write whose script follows a WAIT in flight waits for the next WAIT: INDETERMINATE when that fails', async () => {
    const outcome = await writtenDuringWait(await real(), 'order')
    expect(outcome).toMatchObject({ code: 'INDETERMINATE', context: { acked: 0, required: 1 } })
  }, 30_000)

  it('mutant (joins the WAIT in flight) resolves that write: the check fails', async () => {
    const outcome = await writtenDuringWait(await mutated(joinsWaitInFlight), 'order-mutant')
    expect(outcome.code).toBe('resolved')
  }, 30_000)
})

/** When `check` first held, in ms from now (polled every 20 ms), or `undefined` after `withinMs`. */
async function firstHeld(check: () => Promise<boolean>, withinMs: number) {
  const start = performance.now()
  while (performance.now() - start < withinMs) {
    if (await check()) return performance.now() - start
    await sleep(20)
  }
  return undefined
}

/**
 * With `replicas: 2` and one replica every WAIT blocks its connection for the
 * whole timeout (2 s). While a's WAIT blocks: how long a read takes, and
 * after how long a second write's script has run on the primary (seen with
 * redis-cli), each `undefined` if not within 1 s (half the block).
 */
async function duringBlockedWait(module: Module, namespace: string) {
  const b = open(module, namespace, { replicas: 2, timeoutMs: 2000 })
  const { readMs, write: first } = await readBesideBlockedWrite(b, 'a')
  const second = failureOf(b.put('b', bytes('b')))
  const record = module.redisKeyLayout('as', namespace).record('b')
  const secondRanMs = await firstHeld(
    async () => (await redisCli(primary.port, ['HEXISTS', record, 'v'])).trim() === '1',
    1000,
  )
  // Both writes fail alone (one replica of the two required), after the block.
  expect(await first).toMatchObject({ code: 'INDETERMINATE', context: { acked: 1, required: 2 } })
  expect(await second).toMatchObject({ code: 'INDETERMINATE', context: { acked: 1, required: 2 } })
  return { readMs, secondRanMs }
}

describe('replication: connections that never wait behind a WAIT', () => {
  it('while a WAIT blocks its connection, a read returns and another write runs at once', async () => {
    const { readMs, secondRanMs } = await duringBlockedWait(await real(), 'apart')
    expect(readMs).toBeDefined()
    expect(secondRanMs).toBeDefined()
  }, 30_000)

  it('mutant (reads on the write connection) fails the read check', async () => {
    const { readMs } = await duringBlockedWait(
      await withPlanMutant((plan) => ({ ...plan, readsApart: false })),
      'apart-reads-mutant',
    )
    expect(readMs).toBeUndefined()
  }, 30_000)

  it('mutant (one write connection) fails the write check', async () => {
    const { secondRanMs } = await duringBlockedWait(
      await withPlanMutant((plan) => ({ ...plan, writers: 1 })),
      'apart-pool-mutant',
    )
    expect(secondRanMs).toBeUndefined()
  }, 30_000)
})
