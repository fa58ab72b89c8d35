import { AgentStateError } from '@agent-state/core'
import type Database from 'better-sqlite3'
import {
  listCheck,
  META_CHECK_COLUMNS,
  migratedMetaCheck,
  ROW_CHECK_COLUMNS,
  rowCheck,
  valueCrc,
} from './row-checks.js'

/**
 * The database layout and its migrations. The schema version lives in our own
 * `agent_state_meta` table rather than `PRAGMA user_version`, so an
 * application may keep its own tables (and its own `user_version`) in the
 * same file.
 */

/**
 * The schema version this package writes and reads. 2 added the integrity
 * checks of every row (`value_crc`, `row_check`, `list_check`; see
 * `row-checks.ts`), 3 the `meta_check` that lets `get` and `head` read the
 * meta cells alone.
 */
export const SCHEMA_VERSION = 3

/** Table of one row per (namespace, key): value, writer, lease and fencing counter together. */
export const ENTRIES_TABLE = 'agent_state_entries'
/** Table of named integers; holds `schema_version`. */
export const META_TABLE = 'agent_state_meta'
/** Partial covering index of the keys that hold a value, in byte order: listings read only it. */
export const LIVE_INDEX = 'agent_state_entries_live'
/**
 * Partial index of the deleted keys (version 2). With it, a listing checks
 * that the live keys it read plus the deleted keys equal all keys the primary
 * key has in the same range: three b-trees must agree, so damage that makes
 * one of them skip entries is noticed.
 */
export const DEAD_INDEX = 'agent_state_entries_dead'

const V1_COLUMNS =
  'namespace, key, version, revision, writer, updated_at, size, value, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence'

/**
 * Version 1 to 2: adds the integrity checks and computes them for every
 * existing row, then rebuilds the listing index with `list_check` and adds
 * the index of deleted keys. Runs in
 * the migration's IMMEDIATE transaction, so other processes wait and then see
 * either the old schema (and refuse nothing: they are old too) or the new one
 * with every row checked. Rows are read in rowid pages: better-sqlite3 cannot
 * update while a query iterates. A v1 row that was already damaged gets a
 * check over its damaged cells; the row decoding still refuses what does not
 * decode.
 */
function addChecks(db: Database.Database): void {
  db.exec(
    `ALTER TABLE ${ENTRIES_TABLE} ADD COLUMN value_crc INTEGER;
     ALTER TABLE ${ENTRIES_TABLE} ADD COLUMN list_check INTEGER;
     ALTER TABLE ${ENTRIES_TABLE} ADD COLUMN row_check INTEGER;
     DROP INDEX ${LIVE_INDEX};`,
  )
  const update = db.prepare(
    `UPDATE ${ENTRIES_TABLE} SET value_crc = ?, list_check = ?, row_check = ? WHERE rowid = ?`,
  )
  forEachRow(db, V1_COLUMNS, (row) => {
    const [rowid, namespace, key, version, revision, writer, updatedAt, size, value] = row
    const ns = String(namespace)
    const name = String(key)
    const crc = valueCrc(value instanceof Uint8Array ? value : null)
    const cells = [version, revision, writer, updatedAt, size, crc, ...row.slice(9, 14)]
    update.run(crc, listCheck(ns, name, version, size, updatedAt), rowCheck(ns, name, cells), rowid)
  })
  db.exec(
    `CREATE INDEX ${LIVE_INDEX} ON ${ENTRIES_TABLE} (namespace, key, version, size, updated_at, list_check)
       WHERE version IS NOT NULL;
     CREATE INDEX ${DEAD_INDEX} ON ${ENTRIES_TABLE} (namespace, key) WHERE version IS NULL;`,
  )
}

/**
 * Calls `visit` with `rowid` and then `columns` of every row, in rowid pages:
 * better-sqlite3 cannot update while a query iterates.
 */
function forEachRow(db: Database.Database, columns: string, visit: (row: unknown[]) => void): void {
  const page = db
    .prepare(
      `SELECT rowid, ${columns} FROM ${ENTRIES_TABLE} WHERE rowid > ? ORDER BY rowid LIMIT 256`,
    )
    .raw(true)
  for (let after = 0; ; ) {
    const rows = page.all(after) as unknown[][]
    for (const row of rows) visit(row)
    const last = rows[rows.length - 1]
    if (last === undefined) break
    after = last[0] as number
  }
}

/**
 * Version 2 to 3: adds `meta_check` and computes it for every row whose
 * `row_check` verifies. A row that does not verify (damaged under version 2)
 * keeps a `NULL` `meta_check`: its reads fall back to the whole row and its
 * `row_check`, so the damage stays `CORRUPT` instead of being sealed by a
 * check computed over it. Runs in the migration's IMMEDIATE transaction.
 */
function addMetaChecks(db: Database.Database): void {
  db.exec(`ALTER TABLE ${ENTRIES_TABLE} ADD COLUMN meta_check INTEGER;`)
  const update = db.prepare(`UPDATE ${ENTRIES_TABLE} SET meta_check = ? WHERE rowid = ?`)
  forEachRow(
    db,
    `namespace, key, row_check, ${META_CHECK_COLUMNS}, ${ROW_CHECK_COLUMNS}`,
    (row) => {
      const [rowid, namespace, key, stored] = row
      const check = migratedMetaCheck(
        String(namespace),
        String(key),
        stored,
        row.slice(4, 9),
        row.slice(9),
      )
      if (check !== null) update.run(check, rowid)
    },
  )
}

/**
 * Migrations by the version they produce: `MIGRATIONS[n - 1]` turns version
 * `n - 1` into `n`. Append only; never edit a released one.
 */
const MIGRATIONS: readonly (string | ((db: Database.Database) => void))[] = [
  // 1: the first layout. A rowid table (faster listing than WITHOUT ROWID for
  // 1 KiB values at the default page size), STRICT so a wrongly typed cell
  // cannot be written, and BINARY collation on UTF-8 text, which is byte order.
  `CREATE TABLE ${META_TABLE} (
     name TEXT PRIMARY KEY NOT NULL,
     value INTEGER NOT NULL
   ) STRICT;
   CREATE TABLE ${ENTRIES_TABLE} (
     namespace TEXT NOT NULL COLLATE BINARY,
     key TEXT NOT NULL COLLATE BINARY,
     version TEXT,
     revision INTEGER NOT NULL,
     writer TEXT,
     updated_at REAL NOT NULL,
     size INTEGER NOT NULL,
     value BLOB,
     lease_holder TEXT,
     lease_token INTEGER,
     lease_ttl_ms INTEGER,
     lease_expires_at REAL,
     fence INTEGER NOT NULL,
     PRIMARY KEY (namespace, key)
   ) STRICT;
   CREATE INDEX ${LIVE_INDEX} ON ${ENTRIES_TABLE} (namespace, key, version, size, updated_at)
     WHERE version IS NOT NULL;`,
  // 2: integrity checks on every row.
  addChecks,
  // 3: the meta check of `get` and `head`.
  addMetaChecks,
]

function tableExists(db: Database.Database, name: string): boolean {
  return (
    db
      .prepare("SELECT 1 AS found FROM sqlite_master WHERE type = 'table' AND name = ?")
      .get(name) !== undefined
  )
}

/** Reads the schema version without writing anything: 0 for a database we never initialised. */
export function readSchemaVersion(db: Database.Database): number {
  if (!tableExists(db, META_TABLE)) return 0
  const row = db.prepare(`SELECT value FROM ${META_TABLE} WHERE name = 'schema_version'`).get() as
    | { value: unknown }
    | undefined
  if (row === undefined) return 0
  if (typeof row.value !== 'number' || !Number.isSafeInteger(row.value) || row.value < 0) {
    throw new AgentStateError(
      'CORRUPT',
      'The agent-state schema version in the database is invalid',
      {
        context: { schemaVersion: String(row.value) },
      },
    )
  }
  return row.value
}

/** Throws `INCOMPATIBLE_SCHEMA` when the database was written by a newer version of this package. */
export function assertSupportedVersion(version: number): void {
  if (version > SCHEMA_VERSION) {
    throw new AgentStateError(
      'INCOMPATIBLE_SCHEMA',
      `The database has agent-state schema version ${version}; this version of @agent-state/sqlite reads up to ${SCHEMA_VERSION}. Upgrade the package; the database was left untouched.`,
      { context: { schemaVersion: version, supported: SCHEMA_VERSION } },
    )
  }
}

/**
 * Brings the schema to {@link SCHEMA_VERSION} in one IMMEDIATE transaction,
 * re-reading the version inside it so that processes opening the same new
 * file at once migrate it exactly once. `target` stops at an older version:
 * tests build the databases earlier releases left with it.
 */
export function migrate(db: Database.Database, target = SCHEMA_VERSION): void {
  db.transaction(() => {
    const version = readSchemaVersion(db)
    assertSupportedVersion(version)
    if (version >= target) return
    if (version === 0 && tableExists(db, ENTRIES_TABLE)) {
      // Our table name without our version record: not a layout we know how to migrate.
      throw new AgentStateError(
        'INCOMPATIBLE_SCHEMA',
        `The database has a ${ENTRIES_TABLE} table but no agent-state schema version`,
        { context: { schemaVersion: null, supported: SCHEMA_VERSION } },
      )
    }
    for (let next = version + 1; next <= target; next++) {
      const step = MIGRATIONS[next - 1]
      if (typeof step === 'string') db.exec(step)
      else step?.(db)
    }
    db.prepare(
      `INSERT INTO ${META_TABLE} (name, value) VALUES ('schema_version', ?)
       ON CONFLICT (name) DO UPDATE SET value = excluded.value`,
    ).run(target)
  }).immediate()
}
