import { Socket } from 'node:net'
import { type Backend, getManyByGets, MAX_GET_MANY_KEYS, type StoredValue } from '@agent-state/core'
import { startRedisCluster, startRedisServer, startTcpProxy } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import type * as ErrorsModule from '../src/errors.js'
import type * as BackendModule from '../src/index.js'
import { createRedisBackend, redisKeyLayout } from '../src/index.js'
import { keySlot } from '../src/key-slot.js'
import { readBesideBlockedWrite, withPlanMutant } from './connection-mutants.js'
import { sleep } from './replica-pair.js'

/**
 * Redis's native `getMany` (src/get-many.ts): what the contract's get-many tier cannot see from
 * outside, on a real redis-server and a real 3-master Cluster. Counted, not timed: the socket
 * writes the process makes to the servers during one call (a call that writes once makes one
 * round trip) and the `HMGET`s the server ran (`INFO commandstats`, before and after the call). The answers are compared with
 * `get`'s for the most keys a call may name, shuffled, with duplicates; a damaged record fails the
 * whole call with `CORRUPT`. Each check also runs on a broken `getMany` it must catch, built from
 * the public API (core's fallback, a wrong order, shared duplicates, a lenient read).
 */

const bytes = (text: string) => new TextEncoder().encode(text)

/**
 * `call` until it resolves (at most 20 tries): a first command under a 100 ms timeout also waits
 * for the connection, which a loaded machine can take longer than that to open.
 */
async function warmedUp(call: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await call()
      return
    } catch (error) {
      if (attempt === 20) throw error
      await sleep(50)
    }
  }
}
type GetMany = (keys: readonly string[]) => Promise<(StoredValue | null)[]>

const server = await startRedisServer()
const cluster = await startRedisCluster({ masters: 3 })
const nodes = cluster.nodes.map((node) => ({ host: node.host, port: node.port }))
/** The counting's and the damage's own connection (its INFO is not counted: it runs outside a call). */
const stats = new Redis({ host: server.host, port: server.port })
afterAll(async () => {
  stats.disconnect()
  await Promise.all([server.stop(), cluster.stop()])
})

// Socket writes to a Redis server, per server port, counted on the prototype every client's socket
// shares: ioredis writes each command, or each pipeline, with one `write`.
const writes = new Map<number, number>()
{
  const original = Socket.prototype.write
  Socket.prototype.write = function counted(this: Socket, ...args: unknown[]) {
    const port = this.remotePort
    if (port !== undefined) writes.set(port, (writes.get(port) ?? 0) + 1)
    return (original as (...a: unknown[]) => boolean).apply(this, args)
  } as typeof original
}

/** Writes per server port that `call` made (only the ports written to), and its error code. */
async function writesOf(ports: readonly number[], call: () => Promise<unknown>) {
  const before = ports.map((port) => writes.get(port) ?? 0)
  let code: unknown
  try {
    await call()
  } catch (error) {
    code = (error as { code?: unknown }).code ?? String(error)
  }
  const made = ports
    .map((port, i) => (writes.get(port) ?? 0) - (before[i] as number))
    .filter((n) => n > 0)
  return { writes: made, ...(code === undefined ? {} : { code }) }
}

/** `HMGET`s the single server ran so far (also those inside scripts). */
async function hmgetCalls(): Promise<number> {
  const info = await stats.info('commandstats')
  return Number(/^cmdstat_hmget:calls=(\d+),/m.exec(info)?.[1] ?? '0')
}

function nativeOf(backend: Backend): GetMany {
  const native = backend.getMany?.bind(backend)
  if (native === undefined) throw new Error('the redis backend has no getMany')
  return native
}

/** The text of a value read, or `null`. */
const shown = (entry: StoredValue | null | undefined) =>
  entry === null || entry === undefined ? null : new TextDecoder().decode(entry.value)

/** A deterministic shuffle (a small LCG: the order only has to vary). */
function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed
  for (let i = items.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    const j = state % (i + 1)
    ;[items[i], items[j]] = [items[j] as T, items[i] as T]
  }
  return items
}

/**
 * Reads the most keys a call may name with `read`: `stored` keys written (every ninth deleted
 * again) and 100 never written, shuffled, the rest duplicates. Measures the socket writes of the
 * call to `ports` (and the `HMGET`s it ran when `hmgets` counts them), the entries that differ
 * from `get`'s answer (value or meta), and the duplicate entries whose bytes are the memory of
 * their key's first entry (shared instead of copied).
 */
async function readMost(
  backend: Backend,
  read: GetMany,
  ports: readonly number[],
  stored: readonly string[],
  hmgets?: () => Promise<number>,
) {
  await Promise.all(
    stored.map((key, i) =>
      backend.put(key, bytes(`value ${i}`), { writer: { writerId: `w${i % 3}` } }),
    ),
  )
  await Promise.all(stored.filter((_, i) => i % 9 === 4).map((key) => backend.delete(key)))
  const missing = Array.from({ length: 100 }, (_, i) => `runs/missing/${i}`)
  const distinct = [...stored, ...missing]
  const keys = [...distinct]
  for (let i = 0; keys.length < MAX_GET_MANY_KEYS; i++) {
    keys.push(distinct[(i * 7919) % distinct.length] as string)
  }
  shuffle(keys, 34)
  let got: (StoredValue | null)[] = []
  const hmgetsBefore = hmgets === undefined ? 0 : await hmgets()
  const { writes: made } = await writesOf(ports, async () => {
    got = await read(keys)
  })
  const ran = hmgets === undefined ? {} : { hmgets: (await hmgets()) - hmgetsBefore }
  // Compared with get's answers after the call (its writes and HMGETs are counted above).
  const expected = await Promise.all(keys.map((key) => backend.get(key)))
  const answer = (entry: StoredValue | null | undefined) =>
    JSON.stringify([shown(entry), entry?.meta ?? null])
  const firstOf = new Map<string, StoredValue>()
  let shared = 0
  for (const [i, key] of keys.entries()) {
    const entry = got[i]
    if (entry === null || entry === undefined) continue
    const first = firstOf.get(key)
    if (first === undefined) firstOf.set(key, entry)
    else if (sharesBytes(first.value, entry.value)) shared++
  }
  return {
    writes: made,
    mismatches: keys.filter((_, i) => answer(got[i]) !== answer(expected[i])).length,
    shared,
    ...ran,
  }
}

/** Whether two byte arrays are views of overlapping memory (a write to one would show in the other). */
function sharesBytes(a: Uint8Array, b: Uint8Array): boolean {
  return (
    a.buffer === b.buffer &&
    a.byteOffset < b.byteOffset + b.byteLength &&
    b.byteOffset < a.byteOffset + a.byteLength
  )
}

const STORED = Array.from({ length: 600 }, (_, i) => `runs/r${i % 7}/effects/${i}`)

/** {@link readMost} on the single server, with the `HMGET`s the server ran. */
async function readMostSingle(namespace: string, read: (backend: Backend) => GetMany) {
  const backend = createRedisBackend({ port: server.port, namespace })
  try {
    await backend.get('warm') // connected before counting
    return await readMost(backend, read(backend), [server.port], STORED, hmgetCalls)
  } finally {
    await backend.destroy?.()
    await backend.close()
  }
}

/** A getMany that answers duplicates with the same entry (the same bytes) as the first. */
const sharingDuplicates =
  (backend: Backend): GetMany =>
  async (keys) => {
    const got = await nativeOf(backend)(keys)
    const first = new Map<string, StoredValue | null>()
    return keys.map((key, i) => {
      if (!first.has(key)) first.set(key, got[i] ?? null)
      return first.get(key) ?? null
    })
  }

describe('native getMany on a single redis-server', () => {
  it('answers 1000 shuffled keys with duplicates as get does, in ONE write (one round trip), one HMGET per distinct key', async () => {
    expect(await readMostSingle('gm-native', nativeOf)).toEqual({
      writes: [1],
      mismatches: 0,
      shared: 0,
      hmgets: 700,
    })
  }, 60_000)

  it('mutant: core getManyByGets writes each HMGET on its own', async () => {
    const measured = await readMostSingle('gm-fallback', (b) => (keys) => getManyByGets(b, keys))
    expect(measured).toEqual({ writes: [700], mismatches: 0, shared: 0, hmgets: 700 })
  }, 60_000)

  it('mutant: a getMany that answers in the sorted order of the keys is caught by the order check', async () => {
    const measured = await readMostSingle(
      'gm-sorted',
      (b) => (keys) => nativeOf(b)([...keys].sort()),
    )
    expect(measured.writes).toEqual([1])
    expect(measured.mismatches).toBeGreaterThan(500)
  }, 60_000)

  it('mutant: a getMany that answers duplicates with the same bytes is caught by the copy check', async () => {
    const measured = await readMostSingle('gm-shared', sharingDuplicates)
    expect({ writes: measured.writes, mismatches: measured.mismatches }).toEqual({
      writes: [1],
      mismatches: 0,
    })
    expect(measured.shared).toBeGreaterThan(0)
  }, 60_000)

  it('writes nothing for no keys, a refused argument, or after close', async () => {
    const backend = createRedisBackend({ port: server.port, namespace: 'gm-refused' })
    const native = nativeOf(backend)
    await backend.put('a', bytes('A'))
    const most = Array.from({ length: MAX_GET_MANY_KEYS }, () => 'a')
    const ports = [server.port]
    expect({
      none: await writesOf(ports, () => native([])),
      invalidKey: await writesOf(ports, () => native(['a', 'b//c'])),
      tooMany: await writesOf(ports, () => native([...most, 'a'])),
    }).toEqual({
      none: { writes: [] },
      invalidKey: { writes: [], code: 'INVALID_KEY' },
      tooMany: { writes: [], code: 'INVALID_ARGUMENT' },
    })
    await backend.destroy?.()
    await backend.close()
    // CLOSED before any key is checked, as get.
    expect(await writesOf(ports, () => native(['']))).toEqual({ writes: [], code: 'CLOSED' })
  })

  /** What `read` answers for a, b, c after `damage` changed b's hash behind the backend. */
  async function withDamagedRecord(
    namespace: string,
    damage: (record: string) => Promise<unknown>,
    read: (backend: Backend) => GetMany,
  ): Promise<unknown> {
    const backend = createRedisBackend({ port: server.port, namespace })
    try {
      for (const key of ['a', 'b', 'c']) await backend.put(key, bytes('hello'))
      await damage(redisKeyLayout('as', namespace).record('b'))
      return (await read(backend)(['a', 'b', 'c'])).map(shown)
    } catch (error) {
      return (error as { code?: unknown }).code ?? String(error)
    } finally {
      await stats.del(redisKeyLayout('as', namespace).record('b'))
      await backend.destroy?.()
      await backend.close()
    }
  }

  it.each([
    ['its value removed', (record: string) => stats.hdel(record, 'd')],
    ['its writer not JSON', (record: string) => stats.hset(record, 'w', '{not json')],
    ['its updatedAt not a number', (record: string) => stats.hset(record, 't', 'soon')],
    [
      'a foreign type under its key (WRONGTYPE)',
      async (record: string) => {
        await stats.del(record)
        await stats.set(record, 'foreign')
      },
    ],
  ])('fails the whole call with CORRUPT when a record has %s', async (label, damage) => {
    expect(await withDamagedRecord(`gm-damage-${label.length}`, damage, nativeOf)).toBe('CORRUPT')
  })

  it('mutant: a getMany that answers null for an entry it cannot read hides the damage', async () => {
    const lenient =
      (backend: Backend): GetMany =>
      (keys) =>
        Promise.all(keys.map((key) => backend.get(key).catch(() => null)))
    const damage = (record: string) => stats.hdel(record, 'd')
    expect(await withDamagedRecord('gm-lenient', damage, lenient)).toEqual(['hello', null, 'hello'])
  })

  describe('under replication (no replica: every WAIT blocks its connection 2 s)', () => {
    afterEach(() => {
      vi.doUnmock('../src/connection-pool.js')
      vi.resetModules()
    })

    /** The getMany's time in ms beside a put whose WAIT is in flight (`undefined`: over 1 s). */
    async function getManyBesideWrite(create: typeof createRedisBackend, namespace: string) {
      const b = create({
        port: server.port,
        namespace,
        replication: { replicas: 1, timeoutMs: 2000 },
      })
      const reading: Backend = { ...b, get: async (key) => (await nativeOf(b)([key]))[0] ?? null }
      try {
        const { readMs, write } = await readBesideBlockedWrite(reading, 'k')
        expect(await write).toMatchObject({ code: 'INDETERMINATE' })
        return readMs
      } finally {
        await b.close()
      }
    }

    it('reads on the connection that never carries a WAIT', async () => {
      expect(await getManyBesideWrite(createRedisBackend, 'gm-apart')).toBeDefined()
    }, 30_000)

    it('mutant (reads on the write connection) waits behind the WAIT', async () => {
      const mutant = await withPlanMutant((plan) => ({ ...plan, readsApart: false, writers: 1 }))
      expect(await getManyBesideWrite(mutant.createRedisBackend, 'gm-apart-mutant')).toBeUndefined()
    }, 30_000)
  })
})

describe('native getMany: failures as get maps them', () => {
  afterEach(() => {
    vi.doUnmock('../src/errors.js')
    vi.resetModules()
  })

  /**
   * The codes `getMany` of three keys fails with through a TCP proxy: a reply slower than
   * `commandTimeoutMs` (100 ms; every HMGET of the pipeline carries the timeout), and a
   * connection refused after the last one was dropped.
   */
  async function failureCodes(create: typeof createRedisBackend, namespace: string) {
    const proxy = await startTcpProxy({ target: { host: server.host, port: server.port } })
    const b = create({ port: proxy.port, namespace, commandTimeoutMs: 100, connectTimeoutMs: 1000 })
    const codeOf = (call: Promise<unknown>) =>
      call.then(
        () => 'resolved',
        (error: unknown) => (error as { code?: unknown }).code ?? 'a raw error',
      )
    // Setup goes through a backend with the default timeout, and b connects with retries, so a
    // loaded machine cannot make them, rather than the delayed getMany, time out.
    const plain = create({ port: proxy.port, namespace })
    try {
      await plain.put('a', bytes('A'))
      await warmedUp(() => b.head('a'))
      proxy.setDelay(400)
      const slow = await codeOf(nativeOf(b)(['a', 'b', 'a']))
      proxy.setDelay(0)
      await proxy.setRefusing(true)
      proxy.dropAll()
      // Let the client see the reset; a command written before that would be INDETERMINATE.
      await sleep(100)
      const refused = await codeOf(nativeOf(b)(['a', 'b', 'a']))
      return { slow, refused }
    } finally {
      await Promise.all([b.close(), plain.close()])
      await proxy.stop()
    }
  }

  it('a reply slower than commandTimeoutMs is INDETERMINATE, a refused connection UNAVAILABLE', async () => {
    expect(await failureCodes(createRedisBackend, 'gm-faults')).toEqual({
      slow: 'INDETERMINATE',
      refused: 'UNAVAILABLE',
    })
  }, 30_000)

  it('mutant: ioredis errors passed on unmapped are caught by the codes', async () => {
    vi.resetModules()
    vi.doMock('../src/errors.js', async (importOriginal) => ({
      ...(await importOriginal<typeof ErrorsModule>()),
      mapRedisError: (error: unknown) => error,
    }))
    const mutant = (await import('../src/index.js')) as typeof BackendModule
    expect(await failureCodes(mutant.createRedisBackend, 'gm-faults-mutant')).toEqual({
      slow: 'a raw error',
      // Node's own code of the refused socket, not a contract code.
      refused: 'ECONNREFUSED',
    })
  }, 30_000)
})

describe('native getMany on a 3-master Cluster', () => {
  const ports = nodes.map((node) => node.port)
  /** User keys whose own text hashes to many slots: only the namespace's tag places them. */
  const spread = Array.from({ length: 600 }, (_, i) => `{user-${i}}/effects/${i}`)

  async function readMostCluster(namespace: string, read: (backend: Backend) => GetMany) {
    const backend = createRedisBackend({ cluster: { nodes }, namespace })
    try {
      await backend.get('warm') // connected, slot map loaded, before counting
      return await readMost(backend, read(backend), ports, spread)
    } finally {
      await backend.destroy?.()
      await backend.close()
    }
  }

  it('answers 1000 keys whose own text spans hundreds of slots as get does, in ONE write to ONE node', async () => {
    expect(new Set(spread.map(keySlot)).size).toBeGreaterThan(500)
    expect(await readMostCluster('gm-cluster', nativeOf)).toEqual({
      writes: [1],
      mismatches: 0,
      shared: 0,
    })
  }, 60_000)

  it('mutant: core getManyByGets writes each HMGET on its own', async () => {
    const measured = await readMostCluster(
      'gm-cluster-fallback',
      (b) => (keys) => getManyByGets(b, keys),
    )
    expect(measured).toEqual({ writes: [700], mismatches: 0, shared: 0 })
  }, 60_000)
})
