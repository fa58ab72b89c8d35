import Database from 'better-sqlite3'
import { describe, expect, it } from 'vitest'
import { MAX_BATCH_OPS } from '../src/group-commit.js'
import { createSqliteBackend } from '../src/index.js'
import { rejection, useTempDatabase } from './helpers.js'
import { walCommits } from './wal-commits.js'

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (value: Uint8Array | undefined) => new TextDecoder().decode(value)

/** The code of each settled promise, or 'ok'. */
function outcomes(settled: PromiseSettledResult<unknown>[]): string[] {
  return settled.map((s) =>
    s.status === 'fulfilled' ? 'ok' : String((s.reason as { code?: unknown }).code),
  )
}

describe('group commit', () => {
  const db = useTempDatabase()

  it('commits the mutations of one tick in one transaction, and awaited ones in one each', async () => {
    const backend = db.open()
    await backend.put('warm', bytes('x'))
    const before = walCommits(db.path)
    await Promise.all([
      ...Array.from({ length: 10 }, (_, i) => backend.put(`k${i}`, bytes(String(i)))),
      backend.delete('warm'),
      backend.acquireLease('leased', { holder: 'a', ttlMs: 60_000 }),
    ])
    expect(walCommits(db.path) - before).toBe(1)
    await backend.put('k0', bytes('again'))
    await backend.put('k1', bytes('again'))
    expect(walCommits(db.path) - before).toBe(3)
    for (let i = 2; i < 10; i++) expect(text((await backend.get(`k${i}`))?.value)).toBe(String(i))
  })

  it('batches across deeper promise chains of one turn', async () => {
    const backend = db.open()
    await backend.put('warm', bytes('x'))
    const before = walCommits(db.path)
    // Callers at different promise depths: a flush on the next microtask would miss the deeper ones.
    const deep = async (i: number): Promise<unknown> => {
      for (let hop = 0; hop < i; hop++) await null
      return backend.put(`deep/${i}`, bytes('v'))
    }
    await Promise.all(Array.from({ length: 8 }, (_, i) => deep(i)))
    expect(walCommits(db.path) - before).toBe(1)
  })

  it('gives two compare-and-sets of one version in one batch exactly one winner, the first', async () => {
    const backend = db.open()
    const { version } = await backend.put('cas', bytes('0'))
    const settled = await Promise.allSettled([
      backend.put('cas', bytes('first'), { ifMatch: version }),
      backend.put('cas', bytes('second'), { ifMatch: version }),
    ])
    expect(outcomes(settled)).toEqual(['ok', 'PRECONDITION_FAILED'])
    const stored = await backend.get('cas')
    expect(text(stored?.value)).toBe('first')
    const failure = (settled[1] as PromiseRejectedResult).reason as {
      context: { current: unknown }
    }
    // The loser is told the state the winner left, as in a transaction of its own.
    expect(failure.context.current).toMatchObject({ version: stored?.meta.version, size: 5 })
  })

  it('keeps each failure to its own operation and lets the others of the batch commit', async () => {
    const backend = db.open({ maxValueBytes: 16 })
    const stale = await backend.put('stale', bytes('old'))
    await backend.put('stale', bytes('current'))
    const before = walCommits(db.path)
    const settled = await Promise.allSettled([
      backend.put('a', bytes('a')),
      backend.put('stale', bytes('lost'), { ifMatch: stale.version }),
      backend.put('big', new Uint8Array(17)),
      backend.acquireLease('l', { holder: 'one', ttlMs: 60_000 }),
      backend.acquireLease('l', { holder: 'two', ttlMs: 60_000 }),
      backend.put('fresh', bytes('new'), { ifNoneMatch: '*' }),
      backend.put('fresh', bytes('again'), { ifNoneMatch: '*' }),
      backend.put('b', bytes('b')),
    ])
    expect(outcomes(settled)).toEqual([
      'ok',
      'PRECONDITION_FAILED',
      'VALUE_TOO_LARGE',
      'ok',
      'LEASE_HELD',
      'ok',
      'PRECONDITION_FAILED',
      'ok',
    ])
    expect(walCommits(db.path) - before).toBe(1)
    expect(text((await backend.get('a'))?.value)).toBe('a')
    expect(text((await backend.get('b'))?.value)).toBe('b')
    expect(text((await backend.get('stale'))?.value)).toBe('current')
    expect(text((await backend.get('fresh'))?.value)).toBe('new')
    expect(await backend.get('big')).toBeNull()
    expect((await backend.getLease('l'))?.holder).toBe('one')
  })

  it('rolls back only the operation whose statement SQLite refuses (its savepoint)', async () => {
    const backend = db.open()
    await backend.put('warm', bytes('x'))
    const raw = new Database(db.path)
    raw.exec(`CREATE TRIGGER refuse_boom BEFORE INSERT ON agent_state_entries
      WHEN NEW.key = 'boom' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
    raw.close()
    const settled = await Promise.allSettled([
      backend.put('before', bytes('1')),
      backend.put('boom', bytes('2')),
      backend.put('after', bytes('3')),
    ])
    expect(outcomes(settled)).toEqual(['ok', 'UNAVAILABLE', 'ok'])
    expect(text((await backend.get('before'))?.value)).toBe('1')
    expect(text((await backend.get('after'))?.value)).toBe('3')
    expect(await backend.get('boom')).toBeNull()
  })

  it('applies the operations of a batch in submission order', async () => {
    const backend = db.open()
    const results = await Promise.all([
      backend.put('k', bytes('1')),
      backend.put('k', bytes('2')),
      backend.delete('k'),
      backend.put('k', bytes('3')),
    ])
    const [one, two, deleted, three] = results as [
      { version: string },
      { version: string },
      boolean,
      { version: string },
    ]
    expect(deleted).toBe(true)
    expect(new Set([one.version, two.version, three.version]).size).toBe(3)
    const stored = await backend.get('k')
    expect(text(stored?.value)).toBe('3')
    expect(stored?.meta.version).toBe(three.version)
    // A later compare-and-set with an earlier op's version loses: the batch really ran in order.
    expect((await rejection(backend.put('k', bytes('x'), { ifMatch: two.version }))).code).toBe(
      'PRECONDITION_FAILED',
    )
  })

  it(`splits a tick's mutations into batches of at most ${MAX_BATCH_OPS}, keeping their order`, async () => {
    const backend = db.open()
    await backend.put('warm', bytes('x'))
    const before = walCommits(db.path)
    const count = MAX_BATCH_OPS + 88
    const metas = await Promise.all(
      Array.from({ length: count }, (_, i) => backend.put(`n/${i % 100}`, bytes(String(i)))),
    )
    expect(walCommits(db.path) - before).toBe(2)
    for (let k = 0; k < 100; k++) {
      const last = count - 100 + k
      const stored = await backend.get(`n/${k}`)
      expect(text(stored?.value)).toBe(String(last))
      expect(stored?.meta.version).toBe(metas[last]?.version)
    }
  })

  it('stores the bytes given to put, even if the caller reuses its buffer right away', async () => {
    const backend = db.open()
    const buffer = bytes('original')
    const written = backend.put('k', buffer)
    buffer.fill(0)
    await written
    expect(text((await backend.get('k'))?.value)).toBe('original')
  })

  it('commits the mutations submitted before close()', async () => {
    const backend = createSqliteBackend({ path: db.path })
    const pending = [backend.put('one', bytes('1')), backend.put('two', bytes('2'))]
    await backend.close()
    await Promise.all(pending)
    expect((await rejection(backend.put('three', bytes('3')))).code).toBe('CLOSED')
    const reopened = db.open()
    expect(text((await reopened.get('one'))?.value)).toBe('1')
    expect(text((await reopened.get('two'))?.value)).toBe('2')
  })
})
