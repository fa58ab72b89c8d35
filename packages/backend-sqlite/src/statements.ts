import type { KeyRange } from '@agent-state/core'
import { AgentStateError } from '@agent-state/core'
import type Database from 'better-sqlite3'
import { getManySql } from './get-many.js'
import {
  type EntryParams,
  type LeaseParams,
  META_COLUMNS,
  type RawRow,
  STATE_COLUMNS,
  type ValueParams,
} from './row-codec.js'
import { DEAD_INDEX, ENTRIES_TABLE, LIVE_INDEX } from './schema.js'

/**
 * The prepared statements of one connection, bound to one namespace. Each
 * operation has its own statement selecting only the columns it needs, in raw
 * mode (rows are arrays; `row-codec.ts` decodes them by position).
 */
export interface Statements {
  /** `get`: the meta columns (`META_COLUMNS`), then `value`. */
  readValue(key: string): RawRow | undefined
  /**
   * `getMany`: `get`'s cells of every key of a JSON array of distinct keys, in
   * ONE statement, one row per key (see `getManySql` in `get-many.ts`).
   */
  readMany(keysJson: string): RawRow[]
  /** `head`: the meta columns (`META_COLUMNS`). */
  readMeta(key: string): RawRow | undefined
  /** `get` when the meta cells do not verify: the state columns (`STATE_COLUMNS`), then `value`. */
  readWholeValue(key: string): RawRow | undefined
  /** `getLease`, and `head` when the meta cells do not verify: the state columns (`STATE_COLUMNS`). */
  readWholeMeta(key: string): RawRow | undefined
  /** Writes: `rowid`, then the state columns: every column but the value (see `decodeStateRow`). */
  readState(key: string): RawRow | undefined
  /**
   * Whether the listing index holds a live entry for the key: asked only when
   * the primary key finds no row, so a damaged primary index cannot make a
   * live key read as absent without a second, independent b-tree agreeing.
   */
  listedAsLive(key: string): boolean
  /** Inserts the row of a key that has none yet. */
  insert(key: string, params: EntryParams): void
  /** Replaces the value columns of a row (a put, or a delete with `null`s), leaving lease and fence alone. */
  writeValue(rowid: number, params: ValueParams): void
  /** Replaces the lease columns and fence of a row, leaving the value (and the listing index) alone. */
  writeLease(rowid: number, params: LeaseParams): void
  /**
   * Listing: `key, version, size, updated_at, list_check` of the live keys in
   * `range`, in byte order, from the listing index. In one read transaction,
   * it also counts every key of the range the rows cover through the primary
   * key and the deleted keys through their own index: when the live rows plus
   * the deleted keys are not all keys, an index skipped entries (`CORRUPT`).
   */
  scan(range: KeyRange, limit: number): RawRow[]
  destroy(): void
}

const WHERE_KEY = 'WHERE namespace = ? AND key = ?'

/**
 * The listing scan: `namespace, from[, to], limit` bound in that order. The
 * `version IS NOT NULL` term lets SQLite use the partial covering index, so
 * deleted keys are never read and the order comes from the index, not a sort.
 */
export function scanSql(inclusive: boolean, bounded: boolean): string {
  return `SELECT key, version, size, updated_at, list_check FROM ${ENTRIES_TABLE} INDEXED BY ${LIVE_INDEX}
    WHERE namespace = ? AND version IS NOT NULL AND key ${inclusive ? '>=' : '>'} ?
    ${bounded ? 'AND key < ?' : ''} ORDER BY key LIMIT ?`
}

/** Prepares the statements once per connection; listing shapes are prepared on first use. */
export function prepareStatements(db: Database.Database, namespace: string): Statements {
  const selectRaw = (columns: string): Database.Statement =>
    db.prepare(`SELECT ${columns} FROM ${ENTRIES_TABLE} ${WHERE_KEY}`).raw(true)
  const readValue = selectRaw(`${META_COLUMNS}, value`)
  const readMeta = selectRaw(META_COLUMNS)
  const readMany = db.prepare(getManySql()).raw(true)
  const readWholeValue = selectRaw(`${STATE_COLUMNS}, value`)
  const readWholeMeta = selectRaw(STATE_COLUMNS)
  const readState = selectRaw(`rowid, ${STATE_COLUMNS}`)
  const listed = db
    .prepare(
      `SELECT 1 FROM ${ENTRIES_TABLE} INDEXED BY ${LIVE_INDEX}
       WHERE namespace = ? AND version IS NOT NULL AND key = ?`,
    )
    .pluck()
  const insert = db.prepare(
    `INSERT INTO ${ENTRIES_TABLE} (namespace, key, version, revision, writer, updated_at, size, value,
       value_crc, list_check, meta_check, row_check, lease_holder, lease_token, lease_ttl_ms,
       lease_expires_at, fence)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  // Updates name only the columns they change: SQLite then leaves alone every
  // index whose columns (and partial-index condition) are not assigned, so a
  // lease step does not touch the listing index.
  const writeValue = db.prepare(
    `UPDATE ${ENTRIES_TABLE} SET version = ?, revision = ?, writer = ?, updated_at = ?, size = ?, value = ?,
       value_crc = ?, list_check = ?, meta_check = ?, row_check = ? WHERE rowid = ?`,
  )
  const writeLease = db.prepare(
    `UPDATE ${ENTRIES_TABLE} SET lease_holder = ?, lease_token = ?, lease_ttl_ms = ?,
       lease_expires_at = ?, fence = ?, row_check = ? WHERE rowid = ?`,
  )
  const destroy = db.prepare(`DELETE FROM ${ENTRIES_TABLE} WHERE namespace = ?`)
  const scans = new Map<string, Database.Statement>()
  const counts = new Map<string, Database.Statement>()

  /** `count(*)` of all keys (primary key) or deleted keys (their index) from `from` up to `upper`. */
  function countStatement(
    dead: boolean,
    inclusive: boolean,
    upper: 'none' | 'le' | 'lt',
  ): Database.Statement {
    const shape = `${dead ? 'dead' : 'all'}-${inclusive ? 'ge' : 'gt'}-${upper}`
    let statement = counts.get(shape)
    if (statement === undefined) {
      const bound = upper === 'none' ? '' : `AND key ${upper === 'le' ? '<=' : '<'} ?`
      statement = db
        .prepare(
          `SELECT count(*) FROM ${ENTRIES_TABLE} ${dead ? `INDEXED BY ${DEAD_INDEX}` : ''}
           WHERE namespace = ? ${dead ? 'AND version IS NULL' : ''}
             AND key ${inclusive ? '>=' : '>'} ? ${bound}`,
        )
        .pluck()
      counts.set(shape, statement)
    }
    return statement
  }

  function count(
    dead: boolean,
    range: KeyRange,
    upper: { key: string; inclusive: boolean } | undefined,
  ) {
    const shape = upper === undefined ? 'none' : upper.inclusive ? 'le' : 'lt'
    const statement = countStatement(dead, range.inclusive, shape)
    const value =
      upper === undefined
        ? statement.get(namespace, range.from)
        : statement.get(namespace, range.from, upper.key)
    return value as number
  }

  const scanChecked = db.transaction((range: KeyRange, limit: number): RawRow[] => {
    const statement = scanStatement(range.inclusive, range.to !== undefined)
    const rows = (
      range.to === undefined
        ? statement.all(namespace, range.from, limit)
        : statement.all(namespace, range.from, range.to, limit)
    ) as RawRow[]
    const lastKey = rows.length === limit ? rows[rows.length - 1]?.[0] : undefined
    // A key that is not text is damage the row decoding reports; nothing to bound a count by.
    if (rows.length === limit && typeof lastKey !== 'string') return rows
    const upper =
      typeof lastKey === 'string'
        ? { key: lastKey, inclusive: true }
        : range.to === undefined
          ? undefined
          : { key: range.to, inclusive: false }
    const all = count(false, range, upper)
    const dead = count(true, range, upper)
    if (all !== rows.length + dead) {
      throw new AgentStateError(
        'CORRUPT',
        `The SQLite listing indexes disagree: ${rows.length} live and ${dead} deleted keys, but ${all} keys in the range; an index is damaged (PRAGMA integrity_check shows where)`,
        { context: { live: rows.length, deleted: dead, all, after: range.from } },
      )
    }
    return rows
  })

  function scanStatement(inclusive: boolean, bounded: boolean): Database.Statement {
    const shape = `${inclusive ? 'ge' : 'gt'}${bounded ? '-to' : ''}`
    let statement = scans.get(shape)
    if (statement === undefined) {
      statement = db.prepare(scanSql(inclusive, bounded)).raw(true)
      scans.set(shape, statement)
    }
    return statement
  }

  return {
    readValue: (key) => readValue.get(namespace, key) as RawRow | undefined,
    readMany: (keysJson) => readMany.all(keysJson, namespace, namespace) as RawRow[],
    readMeta: (key) => readMeta.get(namespace, key) as RawRow | undefined,
    readWholeValue: (key) => readWholeValue.get(namespace, key) as RawRow | undefined,
    readWholeMeta: (key) => readWholeMeta.get(namespace, key) as RawRow | undefined,
    readState: (key) => readState.get(namespace, key) as RawRow | undefined,
    listedAsLive: (key) => listed.get(namespace, key) !== undefined,
    insert: (key, params) => {
      insert.run(namespace, key, ...params)
    },
    writeValue: (rowid, params) => {
      writeValue.run(...params, rowid)
    },
    writeLease: (rowid, params) => {
      writeLease.run(...params, rowid)
    },
    // Deferred: a read-only transaction takes no lock in WAL mode, just a consistent snapshot.
    scan: (range, limit) => scanChecked.deferred(range, limit),
    destroy: () => {
      destroy.run(namespace)
    },
  }
}
