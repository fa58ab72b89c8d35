import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import * as sqlite from '../src/index.js'
import type { metaCheck } from '../src/row-checks.js'
import { encodeState, valueParams } from '../src/row-codec.js'
import { migrate } from '../src/schema.js'
import { tempDir } from './helpers.js'
import { V1_SAMPLE_ROWS, writeV1Database } from './legacy-v1-database.js'

/**
 * Schema version 3's `meta_check`: `get` and `head` read the meta cells alone
 * and verify them by it, fall back to the whole row and its `row_check` when
 * it does not match, and the migration from version 2 computes it only for
 * rows that verify. Each scenario takes the package to run against, so the
 * mutant tests below run it against a deliberately broken one.
 */
type Package = typeof sqlite

/** The value or the error code of a read, comparable with `toEqual` across module instances. */
async function outcome(read: Promise<unknown>): Promise<unknown> {
  try {
    return await read
  } catch (error) {
    return { error: (error as { code?: unknown }).code }
  }
}

/**
 * A schema version 2 database, as the previous release left it: version 1's
 * sample rows and statements, then the released migration to 2. Its row
 * `big` had its writer changed after its checks were written: damage a version 2
 * read reports.
 */
function writeV2Database(path: string): void {
  writeV1Database(path, V1_SAMPLE_ROWS)
  const db = new Database(path)
  migrate(db, 2)
  db.prepare(
    `UPDATE agent_state_entries SET writer = '{"writerId":"forged"}' WHERE namespace = 'ns' AND key = 'big'`,
  ).run()
  db.close()
}

async function migratesVersion2(pkg: Package, path: string): Promise<void> {
  writeV2Database(path)
  const backend = pkg.createSqliteBackend({ path, namespace: 'ns' })
  try {
    const a = await backend.get('a')
    expect(a?.value).toEqual(new Uint8Array([1, 2, 3]))
    expect(a?.meta).toEqual({
      key: 'a',
      version: 'v-a',
      size: 3,
      updatedAt: 1_700_000_000_123.5,
      writer: { writerId: 'w', sessionId: 's' },
    })
    expect(await backend.head('a')).toEqual(a?.meta)
    expect(await backend.get('deleted')).toBeNull()
    expect(await backend.head('deleted')).toBeNull()
    expect((await backend.getLease('leased'))?.token).toBe(5)
    expect(await outcome(backend.get('big'))).toEqual({ error: 'CORRUPT' })
    expect(await outcome(backend.head('big'))).toEqual({ error: 'CORRUPT' })
  } finally {
    await backend.close()
  }
  const raw = new Database(path, { readonly: true })
  try {
    expect(
      raw.prepare("SELECT value FROM agent_state_meta WHERE name = 'schema_version'").pluck().get(),
    ).toBe(3)
    expect(
      raw.prepare('SELECT key FROM agent_state_entries WHERE meta_check IS NULL').pluck().all(),
    ).toEqual(['big'])
  } finally {
    raw.close()
  }
}

/** Each meta cell, changed under its checks, makes `get` and `head` `CORRUPT`. */
async function damagedMetaCellsAreCorrupt(pkg: Package, path: string): Promise<void> {
  const backend = pkg.createSqliteBackend({ path, namespace: 'ns' })
  const raw = new Database(path)
  try {
    await backend.put('k', new Uint8Array([1, 2, 3, 4]), { writer: { writerId: 'w' } })
    const damages: Record<string, string> = {
      version: "'v-forged'",
      writer: `'{"writerId":"forged"}'`,
      updated_at: 'updated_at + 1',
      size: '3',
      value_crc: 'value_crc + 1',
    }
    for (const [column, damage] of Object.entries(damages)) {
      const saved = raw
        .prepare(`SELECT ${column} FROM agent_state_entries WHERE key = 'k'`)
        .pluck()
        .get()
      raw.prepare(`UPDATE agent_state_entries SET ${column} = ${damage} WHERE key = 'k'`).run()
      expect(await outcome(backend.get('k')), column).toEqual({ error: 'CORRUPT' })
      expect(await outcome(backend.head('k')), column).toEqual({ error: 'CORRUPT' })
      raw.prepare(`UPDATE agent_state_entries SET ${column} = ? WHERE key = 'k'`).run(saved)
      expect((await backend.get('k'))?.value, column).toEqual(new Uint8Array([1, 2, 3, 4]))
    }
  } finally {
    raw.close()
    await backend.close()
  }
}

/**
 * Rows a schema version 2 process writes after the migration (it has the
 * file open and binds its own statements: no `meta_check`, or a stale one)
 * read correctly, verified by their `row_check`.
 */
async function readsRowsOfVersion2Writers(pkg: Package, path: string): Promise<void> {
  const backend = pkg.createSqliteBackend({ path, namespace: 'ns' })
  const raw = new Database(path)
  try {
    await backend.put('old', new Uint8Array([1]))
    const state = (value: number, version: string) => ({
      version,
      revision: 2,
      writer: { writerId: 'v2' },
      updatedAt: 1_700_000_000_000 + value,
      value: new Uint8Array([value]),
      lease: null,
      fence: 0,
    })
    // Version 2's statements: every check but meta_check (index 8 of the value parameters).
    const withoutMetaCheck = <T extends unknown[]>(params: T) => [
      ...params.slice(0, 8),
      ...params.slice(9),
    ]
    raw
      .prepare(
        `INSERT INTO agent_state_entries (namespace, key, version, revision, writer, updated_at, size, value,
           value_crc, list_check, row_check, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence)
         VALUES ('ns', 'new', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(...withoutMetaCheck(encodeState('ns', 'new', state(7, 'v-new'))))
    raw
      .prepare(
        `UPDATE agent_state_entries SET version = ?, revision = ?, writer = ?, updated_at = ?, size = ?,
           value = ?, value_crc = ?, list_check = ?, row_check = ? WHERE namespace = 'ns' AND key = 'old'`,
      )
      .run(...withoutMetaCheck(valueParams('ns', 'old', state(8, 'v-old2'))))
    for (const [key, byte, version] of [
      ['new', 7, 'v-new'],
      ['old', 8, 'v-old2'],
    ] as const) {
      const read = await backend.get(key)
      expect(read?.value, key).toEqual(new Uint8Array([byte]))
      expect(read?.meta, key).toEqual({
        key,
        version,
        size: 1,
        updatedAt: 1_700_000_000_000 + byte,
        writer: { writerId: 'v2' },
      })
      expect(await backend.head(key), key).toEqual(read?.meta)
    }
  } finally {
    raw.close()
    await backend.close()
  }
}

/** The package with `path` (relative to this file) replaced by what `mutate` makes of it. */
async function mutated(
  path: string,
  mutate: (original: Record<string, unknown>) => Record<string, unknown>,
): Promise<Package> {
  vi.resetModules()
  vi.doMock(path, async (importOriginal) => mutate(await importOriginal()))
  return (await import('../src/index.js')) as Package
}

describe('sqlite meta check (schema version 3)', () => {
  let dir: { dir: string; remove: () => void }
  let path: string
  beforeEach(() => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
  })
  afterEach(() => {
    vi.doUnmock('../src/row-checks.js')
    vi.doUnmock('../src/row-codec.js')
    vi.resetModules()
    dir.remove()
  })

  it('migrates a version 2 database: rows that verify get their meta check, a damaged one stays CORRUPT', async () => {
    await migratesVersion2(sqlite, path)
  })

  it('reports every damaged meta cell as CORRUPT from get and head', async () => {
    await damagedMetaCellsAreCorrupt(sqlite, path)
  })

  it('reads rows written by a version 2 process after the migration through their row check', async () => {
    await readsRowsOfVersion2Writers(sqlite, path)
  })

  it('catches a migration that seals damaged rows with a meta check', async () => {
    const pkg = await mutated('../src/row-checks.js', (original) => ({
      ...original,
      migratedMetaCheck: (namespace: string, key: string, _stored: unknown, metaCells: unknown[]) =>
        (original.metaCheck as typeof metaCheck)(namespace, key, metaCells),
    }))
    await expect(migratesVersion2(pkg, path)).rejects.toThrow(/expected/)
  })

  it('catches get and head that trust the meta cells without their check', async () => {
    const pkg = await mutated('../src/row-checks.js', (original) => ({
      ...original,
      metaCheckAt: (_namespace: string, _key: string, row: unknown[], offset: number) =>
        row[offset + 5],
    }))
    await expect(damagedMetaCellsAreCorrupt(pkg, path)).rejects.toThrow(/expected/)
  })

  it('catches a fallback that trusts the whole row without its row check', async () => {
    const pkg = await mutated('../src/row-checks.js', (original) => ({
      ...original,
      rowCheckAt: (_namespace: string, _key: string, row: unknown[], offset: number) =>
        row[offset + 11],
    }))
    await expect(damagedMetaCellsAreCorrupt(pkg, path)).rejects.toThrow(/expected/)
  })

  it('catches get and head without the fallback to the row check', async () => {
    // The mutant reads a row without a matching meta check as damage, as if no
    // schema 2 writer could exist. Its error class is the fresh module graph's.
    const { AgentStateError } = await import('@agent-state/core')
    const refuse = () => {
      throw new AgentStateError('CORRUPT', 'the meta cells do not match their check')
    }
    const pkg = await mutated('../src/row-codec.js', (original) => ({
      ...original,
      decodeWholeValueRow: refuse,
      decodeWholeMetaRow: refuse,
    }))
    await expect(readsRowsOfVersion2Writers(pkg, path)).rejects.toMatchObject({ code: 'CORRUPT' })
  })
})
