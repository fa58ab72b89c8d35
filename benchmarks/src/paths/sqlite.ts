import { join } from 'node:path'
import { createSqliteBackend } from '@agent-state/sqlite'
import Database from 'better-sqlite3'
import { createDatabase } from 'db0'
import sqliteConnector from 'db0/connectors/better-sqlite3'
import { createStorage } from 'unstorage'
import db0Driver from 'unstorage/drivers/db0'
import { type CasToken, populatedKey, type Subject } from '../subject.js'
import { agentStateSubject } from './agent-state.js'
import { unstorageSubject } from './peers.js'

/** Same journal mode and sync level as the agent-state SQLite backend's defaults. */
const PRAGMAS = ['journal_mode = WAL', 'synchronous = FULL', 'busy_timeout = 5000']

/** The smallest key strictly greater than every key starting with `prefix` (for a range scan). */
function prefixEnd(prefix: string): string {
  return `${prefix}\u{10FFFF}`
}

/**
 * better-sqlite3 with one prepared statement per operation, on a rowid table
 * `(key TEXT PRIMARY KEY, version INTEGER, value BLOB)` in WAL mode with
 * `synchronous=FULL`: the cheapest layout the baseline found for 1 KiB values
 * and key listing.
 */
export function rawSqliteSubject(path: string): Subject {
  const db = new Database(path)
  for (const pragma of PRAGMAS) db.pragma(pragma)
  db.exec(
    'CREATE TABLE IF NOT EXISTS raw_kv (key TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, value BLOB NOT NULL)',
  )
  const upsert = db.prepare('INSERT OR REPLACE INTO raw_kv (key, version, value) VALUES (?, ?, ?)')
  const insert = db.prepare('INSERT INTO raw_kv (key, version, value) VALUES (?, ?, ?)')
  const update = db.prepare(
    'UPDATE raw_kv SET value = ?, version = ? WHERE key = ? AND version = ?',
  )
  const select = db.prepare('SELECT value FROM raw_kv WHERE key = ?').pluck()
  const selectMeta = db.prepare('SELECT version, length(value) AS size FROM raw_kv WHERE key = ?')
  const remove = db.prepare('DELETE FROM raw_kv WHERE key = ?')
  const page = db
    .prepare('SELECT key FROM raw_kv WHERE key > ? AND key < ? ORDER BY key LIMIT ?')
    .pluck()
  const pageFirst = db
    .prepare('SELECT key FROM raw_kv WHERE key >= ? AND key < ? ORDER BY key LIMIT ?')
    .pluck()
  let versions = Date.now()

  const cas = (key: string, value: Uint8Array, token: CasToken): number => {
    const next = ++versions
    if (update.run(value, next, key, token).changes !== 1)
      throw new Error(`raw CAS conflict on ${key}`)
    return next
  }
  return {
    backend: 'sqlite',
    path: 'raw',
    label: 'raw better-sqlite3 (WAL, FULL)',
    notes: {
      put: 'INSERT OR REPLACE',
      cas: 'UPDATE … WHERE key = ? AND version = ?',
      create: 'INSERT (fails on an existing key)',
      lease: 'three conditional UPDATEs of a lease row',
      list: 'SELECT key … WHERE key > ? AND key < ? ORDER BY key LIMIT ?',
    },
    async put(key, value) {
      upsert.run(key, ++versions, value)
    },
    async get(key) {
      return (select.get(key) as Buffer | undefined) ?? null
    },
    async head(key) {
      return selectMeta.get(key) !== undefined
    },
    async delete(key) {
      remove.run(key)
    },
    async casInit(key, value) {
      const version = ++versions
      upsert.run(key, version, value)
      return version
    },
    async cas(key, value, token) {
      return cas(key, value, token)
    },
    async create(key, value) {
      insert.run(key, ++versions, value)
    },
    async leaseCycle(key) {
      const lease = `${key}#lease`
      const empty = Buffer.alloc(0)
      let token = (selectMeta.get(lease) as { version: number } | undefined)?.version
      if (token === undefined) {
        token = ++versions
        insert.run(lease, token, empty)
      }
      for (let step = 0; step < 3; step++) token = cas(lease, empty, token)
    },
    async listPage(prefix, limit, cursor) {
      // One row more than the page tells whether another page follows.
      const rows = (
        cursor === undefined
          ? pageFirst.all(prefix, prefixEnd(prefix), limit + 1)
          : page.all(cursor, prefixEnd(prefix), limit + 1)
      ) as string[]
      if (rows.length <= limit) return { keys: rows }
      const keys = rows.slice(0, limit)
      return { keys, cursor: keys[keys.length - 1] as string }
    },
    async populate(prefix, count, value) {
      db.transaction(() => {
        for (let index = 0; index < count; index++)
          upsert.run(populatedKey(prefix, index), ++versions, value)
      })()
    },
    async close() {
      db.close()
    },
  }
}

/**
 * agent-state SQLite, raw better-sqlite3 and unstorage (db0 driver over
 * better-sqlite3, set to the same WAL/FULL), each in its own file of `dataDir`.
 */
export async function sqliteSubjects(dataDir: string): Promise<Subject[]> {
  const database = createDatabase(sqliteConnector({ path: join(dataDir, 'unstorage.db') }))
  const instance = (await database.getInstance()) as Database.Database
  for (const pragma of PRAGMAS) instance.pragma(pragma)
  const storage = createStorage({ driver: db0Driver({ database }) })
  const ourPath = join(dataDir, 'agent-state.db')
  const unstorage = unstorageSubject(
    storage,
    'sqlite',
    'unstorage (db0 + better-sqlite3, WAL, FULL)',
    async () => {
      instance.close()
    },
  )
  const populate = unstorage.populate?.bind(unstorage)
  // Setup only: the listing population does not need a durable commit per key.
  unstorage.populate = async (prefix, count, value) => {
    instance.pragma('synchronous = OFF')
    try {
      await populate?.(prefix, count, value)
    } finally {
      instance.pragma('synchronous = FULL')
    }
  }
  return [
    agentStateSubject(createSqliteBackend({ path: ourPath, namespace: 'bench' }), 'sqlite', {
      populateWith: () =>
        createSqliteBackend({ path: ourPath, namespace: 'bench', synchronous: 'NORMAL' }),
    }),
    rawSqliteSubject(join(dataDir, 'raw.db')),
    unstorage,
  ]
}
