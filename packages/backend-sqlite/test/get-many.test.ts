import {
  AgentStateError,
  type Backend,
  getManyByGets,
  MAX_GET_MANY_KEYS,
  type StoredValue,
} from '@agent-state/core'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as GetManyModule from '../src/get-many.js'
import { getManySql } from '../src/get-many.js'
import { createSqliteBackend } from '../src/index.js'
import { LIVE_INDEX } from '../src/schema.js'
import { dropIndexEntries, PRIMARY_KEY_INDEX, seededRandom, useTempDatabase } from './helpers.js'

/**
 * SQLite's native `getMany` (src/get-many.ts): what the contract's get-many tier cannot see from
 * outside, on real database files. Its statements are counted on better-sqlite3's Statement
 * methods (one per call, whatever the number of keys); the answers are compared with `get`'s for
 * the most keys a call may name, shuffled, with duplicates; every kind of damage `get` reports
 * fails the whole call with `CORRUPT`, also a stored key the primary index lost. Each check also
 * runs on a broken `getMany` it must catch: built from the public API, or the package imported
 * afresh with get-many.ts mutated.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
type GetMany = (keys: readonly string[]) => Promise<(StoredValue | null)[]>

// Statements run, counted on the prototype every prepared statement of the process shares.
let statements = 0
{
  const probe = new Database(':memory:')
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>
  probe.close()
  for (const method of ['get', 'all', 'run', 'iterate']) {
    const original = proto[method] as (...args: unknown[]) => unknown
    proto[method] = function counted(this: unknown, ...args: unknown[]) {
      statements++
      return original.apply(this, args)
    }
  }
}

/** An error's code (a mutant's backend throws its own core's `AgentStateError` class). */
const codeOf = (error: unknown) => (error as { code?: unknown }).code ?? String(error)

/** Statements `call` runs, and its error code if it fails. */
async function cost(call: () => Promise<unknown>) {
  const before = statements
  let code: unknown
  try {
    await call()
  } catch (error) {
    code = codeOf(error)
  }
  return { statements: statements - before, ...(code === undefined ? {} : { code }) }
}

function nativeOf(backend: Backend): GetMany {
  const native = backend.getMany?.bind(backend)
  if (native === undefined) throw new Error('the sqlite backend has no getMany')
  return native
}

/** The text of a value read, or `null`. */
const shown = (entry: StoredValue | null | undefined) =>
  entry === null || entry === undefined ? null : new TextDecoder().decode(entry.value)

/**
 * Reads the most keys a call may name with `read`: 600 stored keys (every ninth deleted again)
 * and 100 never written, shuffled, the rest duplicates. Measures the statements of the call,
 * the entries that differ from `get`'s answer (value or meta), and the duplicate entries whose
 * bytes change when the first entry of their key is overwritten (shared instead of copied).
 */
async function readMost(backend: Backend, read: GetMany) {
  const stored = Array.from({ length: 600 }, (_, i) => `runs/r${i % 7}/effects/${i}`)
  // Concurrent: the group commit writes them in one transaction (one fsync, not 600).
  await Promise.all(
    stored.map((key, i) =>
      backend.put(key, bytes(`value ${i}`), { writer: { writerId: `w${i % 3}` } }),
    ),
  )
  await Promise.all(stored.filter((_, i) => i % 9 === 4).map((key) => backend.delete(key)))
  const missing = Array.from({ length: 100 }, (_, i) => `runs/missing/${i}`)
  const random = seededRandom(34)
  const distinct = [...stored, ...missing]
  const keys = [...distinct]
  while (keys.length < MAX_GET_MANY_KEYS) keys.push(distinct[Math.floor(random() * 700)] as string)
  for (let i = keys.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[keys[i], keys[j]] = [keys[j] as string, keys[i] as string]
  }
  const before = statements
  const got = await read(keys)
  const measured = { statements: statements - before, mismatches: 0, shared: 0 }
  for (const [i, key] of keys.entries()) {
    const entry = got[i] ?? null
    const expected = await backend.get(key)
    const answer = (read: StoredValue | null) => JSON.stringify([shown(read), read?.meta])
    if (answer(entry) !== answer(expected)) measured.mismatches++
  }
  // Then (the answers compared first) each key's first entry is overwritten.
  const first = new Map<string, StoredValue>()
  for (const [i, key] of keys.entries()) {
    const entry = got[i] ?? null
    if (entry === null) continue
    const earlier = first.get(key)
    if (earlier === undefined) {
      first.set(key, entry)
      continue
    }
    const text = shown(entry)
    earlier.value.fill(0x5a)
    if (shown(entry) !== text) measured.shared++
  }
  return measured
}

/** Opens a backend on `path` from the package imported afresh with get-many.ts mutated. */
async function mutantBackend(
  path: string,
  mutate: (original: typeof GetManyModule) => Partial<typeof GetManyModule>,
): Promise<Backend> {
  vi.resetModules()
  vi.doMock('../src/get-many.js', async (importOriginal) => {
    const original = await importOriginal<typeof GetManyModule>()
    return { ...original, ...mutate(original) }
  })
  const fresh = await import('../src/index.js')
  return fresh.createSqliteBackend({ path, namespace: 'ns' })
}

describe('native getMany on SQLite', () => {
  const db = useTempDatabase()
  afterEach(() => {
    vi.doUnmock('../src/get-many.js')
    vi.resetModules()
  })

  it('answers 1000 shuffled keys with duplicates as get does, in ONE statement', async () => {
    const backend = db.open({ namespace: 'ns' })
    expect(await readMost(backend, nativeOf(backend))).toEqual({
      statements: 1,
      mismatches: 0,
      shared: 0,
    })
  }, 30_000)

  it('mutant: getMany by gets runs a statement per distinct key', async () => {
    const backend = db.open({ namespace: 'ns' })
    const measured = await readMost(backend, (keys) => getManyByGets(backend, keys))
    // A stored or deleted key's get is one statement; a miss five (the read, then the read again
    // and the listing index's check in a transaction: BEGIN, two reads, COMMIT).
    expect(measured).toEqual({ statements: 600 + 100 * 5, mismatches: 0, shared: 0 })
  }, 30_000)

  it('mutant: a getMany that answers in the sorted order of the keys is caught by the order check', async () => {
    const backend = db.open({ namespace: 'ns' })
    const native = nativeOf(backend)
    const measured = await readMost(backend, (keys) => native([...keys].sort()))
    expect(measured.statements).toBe(1)
    expect(measured.mismatches).toBeGreaterThan(500)
  }, 30_000)

  it('mutant: a getMany that answers duplicates with the same bytes is caught by the copy check', async () => {
    const backend = db.open({ namespace: 'ns' })
    const native = nativeOf(backend)
    const sharing: GetMany = async (keys) => {
      const got = await native(keys)
      const first = new Map<string, StoredValue | null>()
      return keys.map((key, i) => {
        if (!first.has(key)) first.set(key, got[i] ?? null)
        return first.get(key) ?? null
      })
    }
    const measured = await readMost(backend, sharing)
    expect({ statements: measured.statements, mismatches: measured.mismatches }).toEqual({
      statements: 1,
      mismatches: 0,
    })
    expect(measured.shared).toBeGreaterThan(0)
  }, 30_000)

  it('runs no statement for no keys, a refused argument, or after close', async () => {
    const backend = db.open({ namespace: 'ns' })
    const native = nativeOf(backend)
    await backend.put('a', bytes('A'))
    const most = Array.from({ length: MAX_GET_MANY_KEYS }, () => 'a')
    expect({
      none: await cost(() => native([])),
      invalidKey: await cost(() => native(['a', 'b//c'])),
      tooMany: await cost(() => native([...most, 'a'])),
    }).toEqual({
      none: { statements: 0 },
      invalidKey: { statements: 0, code: 'INVALID_KEY' },
      tooMany: { statements: 0, code: 'INVALID_ARGUMENT' },
    })
    await backend.close()
    // CLOSED before any key is checked, as get.
    expect(await cost(() => native(['']))).toEqual({ statements: 0, code: 'CLOSED' })
  })

  /** What `read` answers for a, b, c after `damage` changed b's row behind the backend. */
  async function withDamagedRow(
    damage: string,
    read: (backend: Backend) => GetMany,
  ): Promise<unknown> {
    const backend = db.open({ namespace: 'ns' })
    for (const key of ['a', 'b', 'c']) await backend.put(key, bytes('hello'))
    const raw = new Database(db.path)
    raw.prepare(`UPDATE agent_state_entries SET ${damage} WHERE key = 'b'`).run()
    raw.close()
    try {
      return (await read(backend)(['a', 'b', 'c'])).map(shown)
    } catch (error) {
      return codeOf(error)
    }
  }

  it.each([
    ['its value (same size)', "value = CAST('jello' AS BLOB)"],
    [
      'a meta cell (then the whole row is read and fails its row_check)',
      'updated_at = updated_at + 1',
    ],
    ['its writer', `writer = '{"writerId":"forged"}'`],
  ])('fails the whole call with CORRUPT when a row is damaged in %s', async (_label, damage) => {
    expect(await withDamagedRow(damage, nativeOf)).toBe('CORRUPT')
  })

  it('mutant: a getMany that answers null for an entry it cannot read hides the damage', async () => {
    const lenient = (backend: Backend): GetMany => {
      return (keys) => Promise.all(keys.map((key) => backend.get(key).catch(() => null)))
    }
    expect(await withDamagedRow("value = CAST('jello' AS BLOB)", lenient)).toEqual([
      'hello',
      null,
      'hello',
    ])
  })

  /** `getMany` on `open()`'s backend of a database whose primary index lost its last two keys. */
  async function withLostKeys(open: (path: string) => Backend | Promise<Backend>) {
    const backend = db.open({ namespace: 'ns' })
    for (let i = 0; i < 20; i++)
      await backend.put(`key/${String(i).padStart(2, '0')}`, bytes(`${i}`))
    await backend.close()
    dropIndexEntries(db.path, PRIMARY_KEY_INDEX, 2)
    const reopened = db.track(await open(db.path))
    return cost(() => nativeOf(reopened)(['key/00', 'key/19', 'key/30']))
  }

  it('reports a stored key the primary index lost as CORRUPT, never as absent, in the one statement', async () => {
    const open = (path: string) => createSqliteBackend({ path, namespace: 'ns' })
    expect(await withLostKeys(open)).toEqual({ statements: 1, code: 'CORRUPT' })
  })

  it('mutant: a statement without the listing-index check answers the lost key as absent', async () => {
    const unchecked = (original: typeof GetManyModule) => ({
      getManySql: () => {
        const sql = original.getManySql()
        const start = sql.indexOf('CASE')
        const end = sql.indexOf(' END', start) + ' END'.length
        expect(start).toBeGreaterThan(0)
        // 0 for every miss; `? IS NULL` keeps the namespace parameter the check bound.
        return `${sql.slice(0, start)}CASE WHEN entries.rowid IS NULL THEN ? IS NULL END${sql.slice(end)}`
      },
    })
    expect(await withLostKeys((path) => mutantBackend(path, unchecked))).toEqual({ statements: 1 })
  })

  /** `getMany` of a, b where b's row has no `meta_check`, as a schema version 2 process writes it. */
  async function withoutMetaCheck(backend: Backend) {
    await backend.put('a', bytes('A'))
    await backend.put('b', bytes('B'))
    const raw = new Database(db.path)
    raw.prepare("UPDATE agent_state_entries SET meta_check = NULL WHERE key = 'b'").run()
    raw.close()
    let answer: unknown
    const measured = await cost(async () => {
      answer = (await nativeOf(backend)(['a', 'b'])).map(shown)
    })
    return { ...measured, answer }
  }

  it('reads a row without meta_check through its row_check, one statement more', async () => {
    expect(await withoutMetaCheck(db.open({ namespace: 'ns' }))).toEqual({
      statements: 2,
      answer: ['A', 'B'],
    })
  })

  it('mutant: a getMany that trusts meta_check alone reads that row as CORRUPT', async () => {
    const metaOnly = (original: typeof GetManyModule) => ({
      readMany: (deps: GetManyModule.GetManyDeps, keys: readonly string[]) =>
        original.readMany(
          {
            ...deps,
            readWhole: (key) => {
              throw new AgentStateError('CORRUPT', `meta_check of ${key} does not match`)
            },
          },
          keys,
        ),
    })
    const backend = db.track(await mutantBackend(db.path, metaOnly))
    expect(await withoutMetaCheck(backend)).toEqual({
      statements: 1,
      code: 'CORRUPT',
      answer: undefined,
    })
  })

  /** The query plan of `sql` on a fresh database. */
  function planOf(sql: string): string {
    db.open({ namespace: 'ns' })
    const raw = new Database(db.path, { readonly: true })
    try {
      return raw
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all('["a","b"]', 'ns', 'ns')
        .map((row) => (row as { detail: string }).detail)
        .join('\n')
    } finally {
      raw.close()
    }
  }

  it('looks each key up by the primary key, and a miss by the covering listing index', () => {
    const plan = planOf(getManySql())
    expect(plan).toContain(
      `SEARCH entries USING INDEX ${PRIMARY_KEY_INDEX} (namespace=? AND key=?)`,
    )
    expect(plan).toContain(`USING COVERING INDEX ${LIVE_INDEX} (namespace=? AND key=?`)
    expect(plan).not.toMatch(/SCAN (entries|agent_state_entries)/)
  })

  it('mutant: a join the primary key cannot serve scans the namespace, which the plan check sees', () => {
    const plan = planOf(getManySql().replace('entries.key = asked.k', '+entries.key = asked.k'))
    expect(plan).not.toContain(
      `SEARCH entries USING INDEX ${PRIMARY_KEY_INDEX} (namespace=? AND key=?)`,
    )
  })
})
