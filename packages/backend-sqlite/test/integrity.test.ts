import { createHash, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createSqliteBackend, SCHEMA_VERSION } from '../src/index.js'
import { rejection, tempDir, thrown } from './helpers.js'

const sha256 = (path: string): string =>
  createHash('sha256').update(readFileSync(path)).digest('hex')

describe('schema versions and corruption', () => {
  let dir: { dir: string; remove: () => void }
  let path: string

  beforeEach(() => {
    dir = tempDir()
    path = join(dir.dir, 'state.db')
  })
  afterEach(() => dir.remove())

  it('records its schema version in agent_state_meta', async () => {
    const backend = createSqliteBackend({ path })
    await backend.close()
    const raw = new Database(path, { readonly: true })
    expect(
      raw.prepare("SELECT value FROM agent_state_meta WHERE name = 'schema_version'").get(),
    ).toEqual({
      value: SCHEMA_VERSION,
    })
    raw.close()
  })

  it('refuses a database from a newer schema version with INCOMPATIBLE_SCHEMA and leaves it byte-for-byte untouched', async () => {
    const backend = createSqliteBackend({ path })
    await backend.put('kept', new Uint8Array([1, 2, 3]))
    await backend.close()
    const raw = new Database(path)
    raw
      .prepare("UPDATE agent_state_meta SET value = ? WHERE name = 'schema_version'")
      .run(SCHEMA_VERSION + 1)
    // Leave the file in rollback-journal mode: opening must not even switch it to WAL.
    raw.pragma('journal_mode = DELETE')
    raw.close()
    const before = sha256(path)

    const error = thrown(() => createSqliteBackend({ path }))
    expect(error.code).toBe('INCOMPATIBLE_SCHEMA')
    expect(error.context).toMatchObject({
      schemaVersion: SCHEMA_VERSION + 1,
      supported: SCHEMA_VERSION,
    })
    expect(sha256(path)).toBe(before)
    expect(existsSync(`${path}-wal`)).toBe(false)
  })

  it('refuses an existing empty file with INCOMPATIBLE_SCHEMA and leaves it empty', () => {
    writeFileSync(path, '', { mode: 0o600 })
    const error = thrown(() => createSqliteBackend({ path }))
    expect(error.code).toBe('INCOMPATIBLE_SCHEMA')
    expect(error.context).toMatchObject({ reason: 'empty', path })
    expect(error.message).toContain(path)
    expect(readFileSync(path).byteLength).toBe(0)
    expect(existsSync(`${path}-wal`)).toBe(false)
  })

  it("refuses another application's SQLite database with INCOMPATIBLE_SCHEMA, byte-for-byte untouched", () => {
    const raw = new Database(path)
    raw.exec(
      'CREATE TABLE app_data (x INTEGER); INSERT INTO app_data VALUES (1); PRAGMA user_version = 7',
    )
    raw.close()
    const before = sha256(path)
    const error = thrown(() => createSqliteBackend({ path }))
    expect(error.code).toBe('INCOMPATIBLE_SCHEMA')
    expect(error.context).toMatchObject({ reason: 'foreign', path })
    expect(sha256(path)).toBe(before)
    expect(existsSync(`${path}-wal`)).toBe(false)
  })

  it('shares its file with tables an application adds later, and refuses it without its version table', async () => {
    const backend = createSqliteBackend({ path })
    await backend.put('k', new Uint8Array([1]))
    await backend.close()
    const app = new Database(path)
    app.exec('CREATE TABLE app_data (x INTEGER); PRAGMA user_version = 7')
    app.close()
    const reopened = createSqliteBackend({ path })
    expect((await reopened.get('k'))?.value).toEqual(new Uint8Array([1]))
    await reopened.close()
    const check = new Database(path)
    expect(check.pragma('user_version', { simple: true })).toBe(7)
    check.exec('DROP TABLE agent_state_meta')
    check.close()
    expect(thrown(() => createSqliteBackend({ path })).code).toBe('INCOMPATIBLE_SCHEMA')
  })

  it('creates a new file complete, leaving no temporary file beside it', async () => {
    const backend = createSqliteBackend({ path })
    await backend.close()
    expect(readdirSync(dir.dir).filter((name) => name.includes('.creating'))).toEqual([])
    const raw = new Database(path, { readonly: true })
    expect(raw.pragma('journal_mode', { simple: true })).toBe('wal')
    raw.close()
  })

  it('maps a file that is not a database (SQLITE_NOTADB) to CORRUPT and does not overwrite it', () => {
    writeFileSync(path, randomBytes(8192), { mode: 0o600 })
    const before = sha256(path)
    const error = thrown(() => createSqliteBackend({ path }))
    expect(error.code).toBe('CORRUPT')
    expect(error.context).toMatchObject({ sqliteCode: 'SQLITE_NOTADB' })
    expect(error.cause).toBeDefined()
    expect(sha256(path)).toBe(before)
  })

  it('maps a damaged b-tree page (SQLITE_CORRUPT) to CORRUPT', async () => {
    const backend = createSqliteBackend({ path })
    for (let i = 0; i < 400; i++)
      await backend.put(`key/${String(i).padStart(4, '0')}`, randomBytes(300))
    await backend.close()
    // Overwrite every page after the schema pages with garbage; the header stays valid.
    const file = readFileSync(path)
    const pageSize = file.readUInt16BE(16)
    for (let offset = pageSize * 4; offset < file.length; offset += pageSize) {
      randomBytes(pageSize).copy(file, offset)
    }
    writeFileSync(path, file)
    let error: Error | undefined
    try {
      const reopened = createSqliteBackend({ path })
      try {
        await reopened.list()
        await reopened.get('key/0123')
        await reopened.put('key/0200', new Uint8Array([1]))
      } finally {
        await reopened.close()
      }
    } catch (caught) {
      error = caught as Error
    }
    expect(error).toMatchObject({ code: 'CORRUPT' })
  })

  it('reports a row that does not decode as CORRUPT, never as empty', async () => {
    const backend = createSqliteBackend({ path, namespace: 'ns' })
    await backend.put('bad-writer', new Uint8Array([1]), { writer: { writerId: 'w' } })
    await backend.put('bad-size', new Uint8Array([1, 2]))
    const raw = new Database(path)
    raw
      .prepare("UPDATE agent_state_entries SET writer = '{not json' WHERE key = 'bad-writer'")
      .run()
    raw.prepare("UPDATE agent_state_entries SET size = 5 WHERE key = 'bad-size'").run()
    raw.close()
    expect((await rejection(backend.get('bad-writer'))).code).toBe('CORRUPT')
    expect((await rejection(backend.head('bad-writer'))).code).toBe('CORRUPT')
    expect((await rejection(backend.put('bad-writer', new Uint8Array([2])))).code).toBe('CORRUPT')
    expect((await rejection(backend.get('bad-size'))).code).toBe('CORRUPT')
    await backend.close()
  })

  it('escapes control and bidi characters of the key in a CORRUPT message (issue 21)', async () => {
    // Valid keys may hold C1 controls and bidi overrides (C0 and DEL are refused as keys).
    const key = 'c1\u009bkey\u202e'
    const backend = createSqliteBackend({ path, namespace: 'ns' })
    await backend.put(key, new Uint8Array([1]))
    const raw = new Database(path)
    raw.prepare('UPDATE agent_state_entries SET size = 5 WHERE key = ?').run(key)
    raw.close()
    const error = await rejection(backend.get(key))
    expect(error.code).toBe('CORRUPT')
    expect(error.message).not.toMatch(/[\u007f-\u009f\u202e]/)
    expect(error.message).toContain('"c1\\u009bkey\\u202e"')
    expect(error.context.key).toBe(key)
    await backend.close()
  })
})
