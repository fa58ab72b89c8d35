import { describe, expect, it } from 'vitest'
import {
  AgentStateError,
  createRecordBackend,
  isAgentStateError,
  type RecordBackendOptions,
  type RecordStore,
} from '../src/index.js'

const bytes = (...values: number[]) => new Uint8Array(values)

/** Records shared by every store over the same map; each store counts its own reads. */
type Records = Map<string, { data: Uint8Array; version: string }>

function countingStore(records: Records, versionChangesWithBytes: boolean) {
  let counter = 0
  const reads = { count: 0 }
  const store: RecordStore = {
    name: 'counting',
    capabilities: {
      durable: false,
      multiProcess: false,
      multiHost: false,
      maxKeyBytes: 1024,
      maxValueBytes: 1024,
    },
    versionChangesWithBytes,
    async read(key) {
      reads.count++
      return records.get(key) ?? null
    },
    async write(key, data, condition) {
      const current = records.get(key)
      const holds =
        'absent' in condition ? current === undefined : current?.version === condition.version
      if (!holds) throw new AgentStateError('PRECONDITION_FAILED', 'record changed')
      const version = `${key}@${++counter}@${Math.random()}`
      records.set(key, { data: data.slice(), version })
      return version
    },
    async scan() {
      return { records: [], done: true }
    },
    async close() {},
  }
  return { store, reads }
}

function open(records: Records, cached: boolean, options: RecordBackendOptions = {}) {
  const { store, reads } = countingStore(records, cached)
  return { backend: createRecordBackend(store, options), reads }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    return isAgentStateError(error) ? error.code : 'not-an-agent-state-error'
  }
  return 'resolved'
}

describe('createRecordBackend put cache', () => {
  it('skips the read before a put once it has seen the key, on stores whose version covers the bytes', async () => {
    const { backend, reads } = open(new Map(), true)
    await backend.put('k', bytes(1))
    expect(reads.count).toBe(1)
    const second = await backend.put('k', bytes(2), { writer: { writerId: 'w' } })
    const third = await backend.put('k', bytes(3, 3), { ifMatch: second.version })
    expect(reads.count).toBe(1)
    expect(third).toMatchObject({ size: 2, writer: null })
    expect(third.version).not.toBe(second.version)
    const stored = await backend.get('k')
    expect(stored?.value).toEqual(bytes(3, 3))
    expect(stored?.meta.version).toBe(third.version)
  })

  it('reads before every put when the store does not declare versionChangesWithBytes, or the cache is off', async () => {
    for (const [cached, options] of [
      [false, {}],
      [true, { putCacheSize: 0 }],
    ] as const) {
      const { backend, reads } = open(new Map(), cached, options)
      await backend.put('k', bytes(1))
      await backend.put('k', bytes(2))
      await backend.put('k', bytes(3))
      expect(reads.count).toBe(3)
    }
  })

  it('forgets the least recently used key beyond putCacheSize', async () => {
    const { backend, reads } = open(new Map(), true, { putCacheSize: 1 })
    await backend.put('a', bytes(1))
    await backend.put('b', bytes(1))
    await backend.put('a', bytes(2))
    expect(reads.count).toBe(3)
    await backend.put('a', bytes(3))
    expect(reads.count).toBe(3)
  })

  it('falls back to a fresh read when another instance changed the key, and applies the rules to what it read', async () => {
    const records: Records = new Map()
    const mine = open(records, true)
    const theirs = open(records, true)
    const first = await mine.backend.put('k', bytes(1))
    const replaced = await theirs.backend.put('k', bytes(2))

    // A compare-and-set on a stale cached version loses, with the real current meta.
    const error = await mine.backend.put('k', bytes(3), { ifMatch: first.version }).catch((e) => e)
    expect(error).toMatchObject({ code: 'PRECONDITION_FAILED' })
    expect(error.context.current).toMatchObject({ version: replaced.version, size: 1 })

    // A blind put succeeds on top of the other instance's write.
    const lease = await theirs.backend.acquireLease('k', { holder: 'them', ttlMs: 60_000 })
    expect(await codeOf(mine.backend.put('k', bytes(4)))).toBe('LEASE_HELD')
    await theirs.backend.releaseLease(lease)
    const blind = await mine.backend.put('k', bytes(5))
    expect((await theirs.backend.head('k'))?.version).toBe(blind.version)
    // Fencing survives: the next token is above the released one.
    const next = await mine.backend.acquireLease('k', { holder: 'me', ttlMs: 60_000 })
    expect(next.token).toBeGreaterThan(lease.token)
  })

  it('never writes over a record that was tampered with after it was cached', async () => {
    const records: Records = new Map()
    const { backend } = open(records, true)
    await backend.put('k', bytes(1))
    const garbage = { data: bytes(9, 9, 9, 9), version: 'replaced-from-outside' }
    records.set('k', garbage)
    expect(await codeOf(backend.put('k', bytes(2)))).toBe('CORRUPT')
    expect(records.get('k')).toBe(garbage)
  })

  it('does not let a cached state answer create-if-absent or delete', async () => {
    const records: Records = new Map()
    const mine = open(records, true)
    const theirs = open(records, true)
    await mine.backend.put('k', bytes(1))
    expect(await theirs.backend.delete('k')).toBe(true)
    // The cache still holds the value; the write on it loses and the fresh read decides.
    const created = await mine.backend.put('k', bytes(2), { ifNoneMatch: '*' })
    expect(created.size).toBe(1)
    expect(await codeOf(mine.backend.put('k', bytes(3), { ifNoneMatch: '*' }))).toBe(
      'PRECONDITION_FAILED',
    )
  })

  it('writes a create-if-absent of an unseen key without reading, on any store, and lets a fresh read decide when something is there', async () => {
    for (const cached of [false, true]) {
      const records: Records = new Map()
      const mine = open(records, cached)
      const theirs = open(records, cached)
      const created = await mine.backend.put('new', bytes(1), { ifNoneMatch: '*' })
      expect(mine.reads.count).toBe(0)
      expect((await theirs.backend.get('new'))?.meta.version).toBe(created.version)

      // Present: the absent condition fails, the fresh read reports the real current meta.
      const taken = await theirs.backend.put('taken', bytes(1, 2))
      const error = await mine.backend.put('taken', bytes(3), { ifNoneMatch: '*' }).catch((e) => e)
      expect(error).toMatchObject({ code: 'PRECONDITION_FAILED' })
      expect(error.context.current).toMatchObject({ version: taken.version, size: 2 })

      // A tombstone (deleted key, fencing counter kept): the create lands on it.
      await theirs.backend.delete('taken')
      const recreated = await open(records, cached).backend.put('taken', bytes(4), {
        ifNoneMatch: '*',
      })
      expect(recreated.version).not.toBe(taken.version)

      // A live lease held by another: LEASE_HELD, decided on the fresh read.
      await theirs.backend.acquireLease('leased', { holder: 'them', ttlMs: 60_000 })
      expect(
        await codeOf(open(records, cached).backend.put('leased', bytes(5), { ifNoneMatch: '*' })),
      ).toBe('LEASE_HELD')

      // A corrupt record is reported, never overwritten.
      const garbage = { data: bytes(7, 7, 7), version: 'garbage' }
      records.set('bad', garbage)
      expect(
        await codeOf(open(records, cached).backend.put('bad', bytes(6), { ifNoneMatch: '*' })),
      ).toBe('CORRUPT')
      expect(records.get('bad')).toBe(garbage)
    }
  })

  it('deletes a recently seen key without reading, and decides on a fresh read when the guess is stale', async () => {
    const records: Records = new Map()
    const mine = open(records, true)
    const theirs = open(records, true)
    const first = await mine.backend.put('k', bytes(1))
    expect(mine.reads.count).toBe(1)
    expect(await mine.backend.delete('k', { ifMatch: first.version })).toBe(true)
    expect(mine.reads.count).toBe(1)
    expect(await theirs.backend.get('k')).toBeNull()

    // Stale guess (the key came back through another instance): the fresh read decides.
    const again = await mine.backend.put('k', bytes(2))
    const replaced = await theirs.backend.put('k', bytes(3, 3))
    const error = await mine.backend.delete('k', { ifMatch: again.version }).catch((e) => e)
    expect(error).toMatchObject({ code: 'PRECONDITION_FAILED' })
    expect(error.context.current).toMatchObject({ version: replaced.version, size: 2 })
    // A guess that says "nothing to delete" is checked too.
    await theirs.backend.put('gone', bytes(1))
    await theirs.backend.delete('gone')
    expect(await mine.backend.get('gone')).toBeNull()
    await theirs.backend.put('gone', bytes(4))
    expect(await mine.backend.delete('gone')).toBe(true)
    expect(await theirs.backend.get('gone')).toBeNull()
  })
})
