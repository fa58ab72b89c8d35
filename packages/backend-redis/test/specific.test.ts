import { inspect } from 'node:util'
import { type Backend, isAgentStateError, openBackend } from '@agent-state/core'
import { type RedisServer, redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisBackend, openRedisBackend, redisKeyLayout } from '../src/index.js'

const bytes = (text: string) => new TextEncoder().encode(text)
let server: RedisServer
const opened: Backend[] = []

function backend(namespace: string, extra: Record<string, unknown> = {}): Backend {
  const created = createRedisBackend({ port: server.port, namespace, ...extra })
  opened.push(created)
  return created
}

beforeAll(async () => {
  server = await startRedisServer()
})
afterAll(async () => {
  await Promise.all(opened.map((b) => b.close()))
  await server.stop()
})

async function redisKeys(pattern: string): Promise<string[]> {
  const out = await redisCli(server.port, ['--scan', '--pattern', pattern])
  return out.split('\n').filter((line) => line.length > 0)
}

describe('redis backend specifics', () => {
  it('declares the server lease clock; durable only as probed or declared', async () => {
    // Not connected: nothing is known about the server's persistence, so not durable.
    expect(backend('caps').capabilities).toMatchObject({
      durable: false,
      multiProcess: true,
      multiHost: true,
      leaseClock: 'server',
      maxKeyBytes: 1024,
    })
    expect(backend('caps', { durable: true }).capabilities.durable).toBe(true)
    // The test server runs with appendonly yes: the probe finds it.
    const probed = await openRedisBackend({ port: server.port, namespace: 'caps' })
    opened.push(probed)
    expect(probed.capabilities.durable).toBe(true)
    const volatile = await startRedisServer({ extraArgs: ['--appendonly', 'no'] })
    try {
      const onVolatile = await openRedisBackend({ port: volatile.port, namespace: 'caps' })
      expect(onVolatile.capabilities.durable).toBe(false)
      await onVolatile.close()
      // CONFIG disabled (as on managed services): unknown is reported as not durable...
      const locked = await startRedisServer({ extraArgs: ['--rename-command', 'CONFIG', ''] })
      try {
        const onLocked = await openRedisBackend({ port: locked.port, namespace: 'caps' })
        expect(onLocked.capabilities.durable).toBe(false)
        await onLocked.close()
        // ...unless declared.
        const declared = await openRedisBackend({ port: locked.port, durable: true })
        expect(declared.capabilities.durable).toBe(true)
        await declared.close()
      } finally {
        await locked.stop()
      }
    } finally {
      await volatile.stop()
    }
  })

  it('keeps namespaces side by side in one db, and destroy removes only its own keys', async () => {
    const a = backend('ns-a')
    const b = backend('ns-b')
    await a.put('k', bytes('from a'))
    await b.put('k', bytes('from b'))
    await a.acquireLease('leased/only', { holder: 'x', ttlMs: 60_000 })
    await a.put('gone', bytes('x'))
    await a.delete('gone')
    expect(new TextDecoder().decode((await a.get('k'))?.value)).toBe('from a')
    expect(new TextDecoder().decode((await b.get('k'))?.value)).toBe('from b')
    expect((await redisKeys('as:{ns:ns-a}:*')).length).toBeGreaterThanOrEqual(4)
    await a.destroy?.()
    // Every key of the namespace is gone (values, index, registry, leases, counters of deleted keys).
    expect(await redisKeys('as:{ns:ns-a}:*')).toEqual([])
    expect(await a.get('k')).toBeNull()
    expect(new TextDecoder().decode((await b.get('k'))?.value)).toBe('from b')
  })

  it('keeps the sorted index in byte order, without deleted keys', async () => {
    const b = backend('index')
    const layout = redisKeyLayout('as', 'index')
    // U+E000 sorts before an astral character in UTF-8 (EE.. < F0..), after it in UTF-16.
    const keys = ['a/\u{1F600}', 'a/\uE000', 'a/b', 'a/B', 'a/b c', 'z']
    for (const key of keys) await b.put(key, bytes(key))
    await b.delete('a/b c')
    const members = (await redisCli(server.port, ['ZRANGE', layout.index, '0', '-1']))
      .split('\n')
      .filter((line) => line.length > 0)
    expect(members).toEqual(['a/B', 'a/b', 'a/\uE000', 'a/\u{1F600}', 'z'])
    const page = await b.list({ prefix: 'a/' })
    expect(page.entries.map((e) => e.key)).toEqual(['a/B', 'a/b', 'a/\uE000', 'a/\u{1F600}'])
  })

  it('falls back to EVAL when the script cache is flushed (NOSCRIPT)', async () => {
    const b = backend('noscript')
    const first = await b.put('k', bytes('1'))
    await redisCli(server.port, ['SCRIPT', 'FLUSH'])
    const second = await b.put('k', bytes('2'), { ifMatch: first.version })
    expect(second.version).not.toBe(first.version)
    expect((await b.head('k'))?.version).toBe(second.version)
  })

  it('never sets an expiry on records: fencing counters survive delete and a crash restart', async () => {
    const b = backend('fence')
    const layout = redisKeyLayout('as', 'fence')
    const first = await b.acquireLease('job', { holder: 'w1', ttlMs: 60_000 })
    await b.put('job', bytes('x'), { lease: first })
    expect(await b.releaseLease(first)).toBe(true)
    expect(await b.delete('job')).toBe(true)
    expect((await redisCli(server.port, ['TTL', layout.record('job')])).trim()).toBe('-1')
    await server.restart({ signal: 'SIGKILL' })
    let second: Awaited<ReturnType<Backend['acquireLease']>> | undefined
    for (let attempt = 0; second === undefined; attempt++) {
      try {
        second = await b.acquireLease('job', { holder: 'w2', ttlMs: 60_000 })
      } catch (error) {
        if (!isAgentStateError(error, 'UNAVAILABLE') || attempt > 100) throw error
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    expect(second.token).toBeGreaterThan(first.token)
    expect(await b.get('job')).toBeNull()
  })

  it('judges lease expiry on the server clock', async () => {
    const b = backend('clock')
    const time = (await redisCli(server.port, ['TIME'])).trim().split('\n')
    const serverNow = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000)
    const lease = await b.acquireLease('k', { holder: 'h', ttlMs: 10_000 })
    expect(lease.expiresAt).toBeGreaterThanOrEqual(serverNow + 10_000)
    expect(lease.expiresAt).toBeLessThan(serverNow + 12_000)
  })

  it('reports foreign data under a namespace key as CORRUPT', async () => {
    const b = backend('foreign')
    const layout = redisKeyLayout('as', 'foreign')
    await redisCli(server.port, ['SET', layout.record('k'), 'not a hash'])
    await expect(b.put('k', bytes('x'))).rejects.toMatchObject({ code: 'CORRUPT' })
    await expect(b.get('k')).rejects.toMatchObject({ code: 'CORRUPT' })
  })

  it('close is idempotent, works before any connection, and later calls fail CLOSED', async () => {
    const never = backend('closed')
    await never.close()
    await never.close()
    await expect(never.get('k')).rejects.toMatchObject({ code: 'CLOSED' })
    const used = backend('closed')
    await used.put('k', bytes('x'))
    await used.close()
    await expect(used.put('k', bytes('y'))).rejects.toMatchObject({ code: 'CLOSED' })
    await expect(used.list()).rejects.toMatchObject({ code: 'CLOSED' })
  })

  it('opens by URL through openBackend, with a db number', async () => {
    const b = await openBackend(`redis://127.0.0.1:${server.port}/3`, { namespace: 'by-url' })
    opened.push(b)
    await b.put('k', bytes('x'))
    const inDb3 = await redisCli(server.port, [
      '-n',
      '3',
      'EXISTS',
      redisKeyLayout('as', 'by-url').record('k'),
    ])
    expect(inDb3.trim()).toBe('1')
    const inDb0 = await redisCli(server.port, [
      'EXISTS',
      redisKeyLayout('as', 'by-url').record('k'),
    ])
    expect(inDb0.trim()).toBe('0')
    await b.destroy?.()
  })
})

describe('credentials', () => {
  const password = 'Sup3r-Secret-PW-9137'
  let secured: RedisServer
  beforeAll(async () => {
    secured = await startRedisServer({ password })
  })
  afterAll(() => secured.stop())

  function expectNoSecret(error: unknown): void {
    expect(isAgentStateError(error)).toBe(true)
    const shown = [
      (error as Error).message,
      JSON.stringify(error),
      JSON.stringify((error as { context: unknown }).context),
      inspect(error, { depth: 10 }),
      String((error as Error).stack),
    ].join('\n')
    expect(shown).not.toContain(password)
    expect(shown).not.toContain(encodeURIComponent(password))
  }

  it('authenticates with a password in the URL (percent-encoded)', async () => {
    const b = await openBackend(
      `redis://default:${encodeURIComponent(password)}@127.0.0.1:${secured.port}/0`,
      { namespace: 'auth' },
    )
    opened.push(b)
    await b.put('k', bytes('x'))
    expect((await b.get('k'))?.value).toEqual(bytes('x'))
  })

  it('a wrong password fails UNAVAILABLE without showing the password', async () => {
    const wrong = `${password}-wrong`
    // openBackend connects and probes the server, so the failure comes from the open itself.
    const error = await openBackend(`redis://default:${wrong}@127.0.0.1:${secured.port}`, {
      namespace: 'auth',
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'UNAVAILABLE' })
    const shown = `${(error as Error).message}${JSON.stringify(error)}${inspect(error, { depth: 10 })}`
    expect(shown).not.toContain(wrong)
    expectNoSecret(error)
  })

  it('a refused connection with a password in the URL fails UNAVAILABLE without the password', async () => {
    const error = await openBackend(`redis://:${password}@127.0.0.1:1/`, {
      namespace: 'auth',
    }).catch((e: unknown) => e)
    expect(error).toMatchObject({ code: 'UNAVAILABLE' })
    expectNoSecret(error)
  })

  it('a malformed URL fails INVALID_ARGUMENT without the password', async () => {
    const error = await openBackend(`redis://u:${password}@127.0.0.1:6379/x?bogus=1`).catch(
      (e: unknown) => e,
    )
    expect(error).toMatchObject({ code: 'INVALID_ARGUMENT' })
    expectNoSecret(error)
  })
})
