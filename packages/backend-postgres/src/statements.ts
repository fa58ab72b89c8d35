import type { KeyRange } from '@agent-state/core'
import { ENTRIES_TABLE, ROW_VERSIONS } from './schema.js'

/**
 * The `NOTIFY` channel of the backends in `schema` (all their namespaces):
 * `agent_state:<schema>`, cut to PostgreSQL's 63-byte channel names. Two
 * schemas whose names share their first 51 characters share a channel, which
 * costs their watchers spurious hints (allowed), never a lost one.
 */
export function changeChannel(schema: string): string {
  return `agent_state:${schema}`.slice(0, 63)
}

/**
 * The SQL of every operation, for one schema. Each operation is ONE
 * statement sent as an unnamed extended-protocol query (no named prepared
 * statement: PgBouncer's transaction pooling may run the next statement on
 * another server connection). Writes are autocommit statements: the row
 * lock an `UPDATE` takes lives only while the server executes that
 * statement, never across a round trip to the client.
 */
export interface Statements {
  /**
   * The database clock and the key's state columns (`STATE_COLUMNS`), with
   * the value when `withValue`: one row always (a left join on the clock), its
   * `row_version` null when the key has no row. `$1` namespace, `$2` key.
   */
  readonly read: string
  readonly readWithValue: string
  /** Creates the row of a key that has none: `ON CONFLICT DO NOTHING`, so a lost race returns no row. */
  readonly insert: string
  /**
   * The change hint of a committed write, `<namespace>/<key>` (`$1`, `$2`), in
   * a transaction of its own that does not wait for its WAL flush (see
   * `buildStatements`). Pipelined behind the write, so the server runs it
   * after the write committed; the writer acknowledges once it committed.
   */
  readonly announce: string
  /** Value columns of a row, conditional on its row version; `fenced`: also on the lease token and expiry. */
  writeValue(fenced: boolean): string
  /** Lease columns of a row, conditional on its row version; `fenced`: also on the lease token and expiry. */
  writeLease(fenced: boolean): string
  /** Removes a row conditionally on its row version (a delete of a key that never had a lease). */
  readonly remove: string
  /** Live keys of a range in byte order: `$1` namespace, `$2` from, [`$3` to], then the limit. */
  scan(range: KeyRange): string
  /**
   * Every row of a namespace; announces the namespace (payload `<namespace>/`,
   * no key) in its own transaction: `destroy` is rare, its serialized commit costs nothing.
   */
  readonly destroy: string
}

/** The columns `row-codec.ts` decodes, in its order. */
export const STATE_COLUMNS =
  'e.row_version, e.version, e.revision, e.writer, e.updated_at, e.size, e.value_crc, e.lease_holder, e.lease_token, e.lease_ttl_ms, e.lease_expires_at, e.fence'

/**
 * Milliseconds since the epoch on the database clock. `clock_timestamp()`,
 * not `now()`: `now()` is the start of the transaction, and a statement
 * queued behind a lock would judge expiry by a time already past.
 */
export const NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint'

/** Builds the statements of the backend in `schema` (an identifier checked by the options schema). */
export function buildStatements(schema: string): Statements {
  const table = `${schema}.${ENTRIES_TABLE}`
  // The change hint of a write is NOT queued by the write's own transaction:
  // PostgreSQL serializes the commits of every transaction that queued a
  // notification (a database-wide lock taken before the commit record and held
  // until the commit is flushed), so notifying writes could not share a WAL
  // flush (no group commit). The writer announces the key in a second, tiny
  // transaction pipelined right behind the write on the same connection (run by
  // the server once the write committed), and acknowledges the write only once
  // both committed; that one
  // sets `synchronous_commit` off for itself only (`set_config(…, true)`):
  // its commit record carries no data, a crash that loses it also drops every
  // listen connection (whose watches resync), so the lock is held for
  // microseconds instead of an fsync. The payload is `<namespace>/<key>`, at
  // most 128 + 1 + 1024 bytes: always under NOTIFY's 8000-byte payload limit.
  const channel = `'${changeChannel(schema)}'`
  const read = (value: boolean) =>
    `SELECT n.now_ms, ${STATE_COLUMNS}${value ? ', e.value' : ''}
     FROM (SELECT ${NOW_MS} AS now_ms) n
     LEFT JOIN ${table} e ON e.namespace = $1 AND e.key = $2`
  // The lease guard of a fenced write, in the write statement itself, on
  // the database clock: the token must still be the row's and unexpired at
  // the moment the row is written (row_version alone would accept a lease
  // that expired between the read and the write).
  const guard = (fenced: boolean, tokenParam: number) =>
    fenced ? ` AND lease_token = $${tokenParam} AND lease_expires_at > ${NOW_MS}` : ''
  const nextRowVersion = `nextval('${schema}.${ROW_VERSIONS}')`
  return {
    read: read(false),
    readWithValue: read(true),
    insert: `INSERT INTO ${table} (namespace, key, version, revision, writer, updated_at, size, value,
        value_crc, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
      ON CONFLICT (namespace, key) DO NOTHING RETURNING row_version`,
    announce: `SELECT set_config('synchronous_commit', 'off', true), pg_notify(${channel}, $1 || '/' || $2)`,
    writeValue: (fenced) =>
      `UPDATE ${table} SET version = $4, revision = $5, writer = $6, updated_at = $7, size = $8,
         value = $9, value_crc = $10, row_version = ${nextRowVersion}
       WHERE namespace = $1 AND key = $2 AND row_version = $3${guard(fenced, 11)}
       RETURNING row_version`,
    // Lease steps change no value and announce nothing (the contract promises them no hint).
    writeLease: (fenced) =>
      `UPDATE ${table} SET lease_holder = $4, lease_token = $5, lease_ttl_ms = $6,
         lease_expires_at = $7, fence = $8, row_version = ${nextRowVersion}
       WHERE namespace = $1 AND key = $2 AND row_version = $3${guard(fenced, 9)}
       RETURNING row_version`,
    remove: `DELETE FROM ${table} WHERE namespace = $1 AND key = $2 AND row_version = $3 RETURNING row_version`,
    scan: (range) =>
      `SELECT key, version, size, updated_at FROM ${table}
       WHERE namespace = $1 AND version IS NOT NULL AND key ${range.inclusive ? '>=' : '>'} $2
       ${range.to === undefined ? '' : 'AND key < $3'}
       ORDER BY key COLLATE "C" LIMIT $${range.to === undefined ? 3 : 4}`,
    destroy: `WITH d AS (DELETE FROM ${table} WHERE namespace = $1 RETURNING 1)
      SELECT pg_notify(${channel}, $1 || '/') FROM (SELECT count(*) FROM d) c`,
  }
}
