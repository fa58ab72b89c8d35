import type Database from 'better-sqlite3'
import type { KeyRange } from './key-range.js'
import type { EntryParams, EntryRow } from './row-codec.js'
import { ENTRIES_TABLE, LIVE_INDEX } from './schema.js'

/** One row of a listing scan, straight from the covering index. */
export interface ListedRow {
  readonly key: string
  readonly version: string
  readonly size: number
  readonly updated_at: number
}

/** The prepared statements of one connection, bound to one namespace. */
export interface Statements {
  select(key: string): EntryRow | undefined
  selectMeta(key: string): EntryRow | undefined
  upsert(key: string, params: EntryParams): void
  scan(range: KeyRange, limit: number): ListedRow[]
  destroy(): void
}

const STATE_COLUMNS =
  'version, revision, writer, updated_at, size, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence'

/** Prepares the statements once per connection; listing shapes are prepared on first use. */
export function prepareStatements(db: Database.Database, namespace: string): Statements {
  const select = db.prepare(
    `SELECT ${STATE_COLUMNS}, value FROM ${ENTRIES_TABLE} WHERE namespace = ? AND key = ?`,
  )
  const selectMeta = db.prepare(
    `SELECT ${STATE_COLUMNS} FROM ${ENTRIES_TABLE} WHERE namespace = ? AND key = ?`,
  )
  const upsert = db.prepare(
    `INSERT INTO ${ENTRIES_TABLE} (namespace, key, version, revision, writer, updated_at, size, value,
       lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (namespace, key) DO UPDATE SET
       version = excluded.version, revision = excluded.revision, writer = excluded.writer,
       updated_at = excluded.updated_at, size = excluded.size, value = excluded.value,
       lease_holder = excluded.lease_holder, lease_token = excluded.lease_token,
       lease_ttl_ms = excluded.lease_ttl_ms, lease_expires_at = excluded.lease_expires_at,
       fence = excluded.fence`,
  )
  const destroy = db.prepare(`DELETE FROM ${ENTRIES_TABLE} WHERE namespace = ?`)
  const scans = new Map<string, Database.Statement>()

  function scanStatement(inclusive: boolean, bounded: boolean): Database.Statement {
    const shape = `${inclusive ? 'ge' : 'gt'}${bounded ? '-to' : ''}`
    let statement = scans.get(shape)
    if (statement === undefined) {
      // The `version IS NOT NULL` term lets SQLite use the partial index, so
      // deleted keys are never read and the order comes from the index, not a sort.
      statement = db.prepare(
        `SELECT key, version, size, updated_at FROM ${ENTRIES_TABLE} INDEXED BY ${LIVE_INDEX}
         WHERE namespace = ? AND version IS NOT NULL AND key ${inclusive ? '>=' : '>'} ?
         ${bounded ? 'AND key < ?' : ''} ORDER BY key LIMIT ?`,
      )
      scans.set(shape, statement)
    }
    return statement
  }

  return {
    select: (key) => select.get(namespace, key) as EntryRow | undefined,
    selectMeta: (key) => selectMeta.get(namespace, key) as EntryRow | undefined,
    upsert: (key, params) => {
      upsert.run(namespace, key, ...params)
    },
    scan(range, limit) {
      const statement = scanStatement(range.inclusive, range.to !== undefined)
      const rows =
        range.to === undefined
          ? statement.all(namespace, range.from, limit)
          : statement.all(namespace, range.from, range.to, limit)
      return rows as ListedRow[]
    },
    destroy: () => {
      destroy.run(namespace)
    },
  }
}
