import { type Backend, isAgentStateError } from '@agent-state/core'
import {
  type RedisServer,
  startRedisServer,
  startTcpProxy,
  type TcpProxy,
} from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisBackend } from '../src/index.js'

/**
 * Fault tests on a real redis-server: a crash restart and dropped connections
 * while clients run compare-and-set increment loops. After the faults, the
 * counter must equal the confirmed increments plus at most the indeterminate
 * ones: nothing acknowledged is lost, nothing is applied that no client sent,
 * and every failure is UNAVAILABLE or INDETERMINATE (never a raw error).
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const encode = (n: number) => new TextEncoder().encode(String(n))
const decode = (value: Uint8Array) => Number(new TextDecoder().decode(value))

interface Tally {
  confirmed: number
  indeterminate: number
  unavailable: number
  conflicts: number
}

/** One client's CAS increment loop until `stop()` says so and `minConfirmed` is reached. */
async function incrementLoop(
  backend: Backend,
  key: string,
  tally: Tally,
  shouldStop: () => boolean,
): Promise<void> {
  while (!shouldStop()) {
    try {
      const current = await backend.get(key)
      if (current === null) throw new Error('the counter vanished')
      const n = decode(current.value)
      if (!Number.isSafeInteger(n)) throw new Error('corrupted counter')
      await backend.put(key, encode(n + 1), { ifMatch: current.meta.version })
      tally.confirmed++
    } catch (error) {
      if (isAgentStateError(error, 'PRECONDITION_FAILED')) tally.conflicts++
      else if (isAgentStateError(error, 'INDETERMINATE')) tally.indeterminate++
      else if (isAgentStateError(error, 'UNAVAILABLE')) {
        tally.unavailable++
        await sleep(10)
      } else throw error
    }
  }
}

async function readCounter(backend: Backend, key: string): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    try {
      const current = await backend.get(key)
      if (current === null) throw new Error('the counter vanished')
      return decode(current.value)
    } catch (error) {
      if (!isAgentStateError(error, 'UNAVAILABLE') || attempt > 200) throw error
      await sleep(25)
    }
  }
}

/** Runs `clients` loops while `faults` runs, then a little longer so work resumes. */
async function runWithFaults(
  backends: Backend[],
  key: string,
  faults: () => Promise<void>,
): Promise<{ tallies: Tally[]; confirmedAfterFaults: number }> {
  await backends[0]?.put(key, encode(0))
  const tallies = backends.map(() => ({
    confirmed: 0,
    indeterminate: 0,
    unavailable: 0,
    conflicts: 0,
  }))
  let stopping = false
  const loops = backends.map((b, i) => incrementLoop(b, key, tallies[i] as Tally, () => stopping))
  const total = () => tallies.reduce((sum, t) => sum + t.confirmed, 0)
  await sleep(300)
  await faults()
  const atFaultEnd = total()
  // Work must resume: wait for real progress after the faults.
  const deadline = Date.now() + 20_000
  while (total() < atFaultEnd + 50 && Date.now() < deadline) await sleep(20)
  stopping = true
  await Promise.all(loops)
  return { tallies, confirmedAfterFaults: total() - atFaultEnd }
}

function expectCountInvariant(final: number, tallies: Tally[]): void {
  const confirmed = tallies.reduce((sum, t) => sum + t.confirmed, 0)
  const indeterminate = tallies.reduce((sum, t) => sum + t.indeterminate, 0)
  const unavailable = tallies.reduce((sum, t) => sum + t.unavailable, 0)
  console.log(
    `final ${final}: confirmed ${confirmed}, indeterminate ${indeterminate}, unavailable ${unavailable}`,
  )
  expect(final).toBeGreaterThanOrEqual(confirmed)
  expect(final).toBeLessThanOrEqual(confirmed + indeterminate)
}

describe('fault: server crash restart mid-run', () => {
  let server: RedisServer
  beforeAll(async () => {
    server = await startRedisServer({ appendfsync: 'everysec' })
  })
  afterAll(() => server.stop())

  it('fails ops as UNAVAILABLE/INDETERMINATE during the outage and loses no confirmed increment', async () => {
    const backends = Array.from({ length: 4 }, () =>
      createRedisBackend({
        port: server.port,
        namespace: 'restart',
        connectTimeoutMs: 500,
        commandTimeoutMs: 2000,
      }),
    )
    try {
      const { tallies, confirmedAfterFaults } = await runWithFaults(
        backends,
        'counter',
        async () => {
          // SIGKILL: no clean shutdown. Acknowledged writes were already written to the AOF.
          await server.restart({ signal: 'SIGKILL', downMs: 500 })
        },
      )
      const failures = tallies.reduce((sum, t) => sum + t.unavailable + t.indeterminate, 0)
      expect(failures).toBeGreaterThan(0)
      expect(confirmedAfterFaults).toBeGreaterThanOrEqual(50)
      expectCountInvariant(await readCounter(backends[0] as Backend, 'counter'), tallies)
      const meta = await backends[1]?.head('counter')
      expect(meta?.size).toBeGreaterThan(0)
    } finally {
      await Promise.all(backends.map((b) => b.close()))
    }
  }, 60_000)
})

describe('fault: connections dropped mid-command by a TCP proxy', () => {
  let server: RedisServer
  let proxy: TcpProxy
  beforeAll(async () => {
    server = await startRedisServer()
    proxy = await startTcpProxy({ target: { host: server.host, port: server.port } })
  })
  afterAll(async () => {
    await proxy.stop()
    await server.stop()
  })

  it('classifies every failure and keeps the count exact within the indeterminate ones', async () => {
    const backends = Array.from({ length: 4 }, () =>
      createRedisBackend({
        port: proxy.port,
        namespace: 'drops',
        connectTimeoutMs: 1000,
        commandTimeoutMs: 2000,
      }),
    )
    try {
      const { tallies } = await runWithFaults(backends, 'counter', async () => {
        // A little latency keeps commands in flight when the cut comes.
        proxy.setDelay(2)
        for (let i = 0; i < 8; i++) {
          await sleep(60)
          proxy.dropAll()
        }
        proxy.setDelay(0)
      })
      const indeterminate = tallies.reduce((sum, t) => sum + t.indeterminate, 0)
      expect(indeterminate).toBeGreaterThan(0)
      expectCountInvariant(await readCounter(backends[0] as Backend, 'counter'), tallies)
    } finally {
      await Promise.all(backends.map((b) => b.close()))
    }
  }, 60_000)

  it('refused connections fail UNAVAILABLE quickly and work resumes when accepted again', async () => {
    const b = createRedisBackend({ port: proxy.port, namespace: 'refuse', connectTimeoutMs: 1000 })
    try {
      await b.put('k', encode(1))
      await proxy.setRefusing(true)
      proxy.dropAll()
      // Let the client see the reset; a command written before that would be INDETERMINATE.
      await sleep(100)
      const started = Date.now()
      await expect(b.get('k')).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      await expect(b.put('k', encode(2))).rejects.toMatchObject({ code: 'UNAVAILABLE' })
      expect(Date.now() - started).toBeLessThan(3000)
      await proxy.setRefusing(false)
      expect(await readCounter(b, 'k')).toBe(1)
    } finally {
      await proxy.setRefusing(false)
      await b.close()
    }
  })

  it('a reply slower than commandTimeoutMs is INDETERMINATE (the write may land)', async () => {
    const b = createRedisBackend({ port: proxy.port, namespace: 'slow', commandTimeoutMs: 100 })
    // Setup and the final read go through a backend with the default timeout, so a loaded
    // machine cannot make them, rather than the delayed put, time out.
    const plain = createRedisBackend({ port: proxy.port, namespace: 'slow' })
    try {
      const first = await plain.put('k', encode(1))
      // Connect b before the delay: only the put below may meet it.
      expect((await b.head('k'))?.version).toBe(first.version)
      proxy.setDelay(400)
      const error = await b.put('k', encode(2), { ifMatch: first.version }).catch((e: unknown) => e)
      proxy.setDelay(0)
      expect(error).toMatchObject({ code: 'INDETERMINATE' })
      // The command had been sent: it did land, which is exactly why it is not UNAVAILABLE.
      await sleep(1000)
      expect(await readCounter(plain, 'k')).toBe(2)
    } finally {
      await Promise.all([b.close(), plain.close()])
    }
  })
})
