import type { KeyRange } from '@agent-state/core'
import { declareAnswer } from './answer-check.js'
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
 * The change hints of the keys `$2` (a `text[]`) of namespace `$1`, in one
 * statement: the hint batch of concurrent writes (hint-batch.ts) and the
 * native queue's hints (queue-statements.ts). Its transaction's commit
 * does not wait for the disk (`synchronous_commit` off, see
 * {@link buildStatements}: a crash that loses it drops every listen
 * connection too, whose watches resync).
 */
export function announceKeysSql(schema: string): string {
  return declareAnswer(
    `SELECT set_config('synchronous_commit', 'off', true), pg_notify('${changeChannel(schema)}', $1 || '/' || k)
      FROM unnest($2::text[]) k`,
    HINT_COLUMNS,
  )
}

/** The columns of a change hint's answer (`set_config`, `pg_notify`: both void). */
const HINT_COLUMNS = ['set_config', 'pg_notify']

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
  /**
   * The change hints of the keys `$2` (`$1` namespace) in one transaction, as
   * {@link Statements.announce}: the batch of the writes that committed while
   * an earlier hint was in flight (hint-batch.ts).
   */
  readonly announceKeys: string
  /**
   * A `put` in ONE statement (one round trip): writes the value only if the
   * contract's conditions hold on the row as it is when written (lease
   * free or, `fenced`, the given token unexpired, on the database clock;
   * `ifMatch`/`ifNoneMatch`), and returns the row as the statement's snapshot
   * saw it (`STATE_COLUMNS` and `now_ms`, which the backend judges a refusal
   * by) with `written_version`/`written_updated_at` (null when nothing was
   * written). See {@link PutShape} for the parameters.
   */
  put(shape: PutShape): string
  /**
   * A `delete` in ONE statement, as {@link Statements.put}: removes the row
   * of a key that never had a lease, keeps the row of one that did (its
   * fencing counter) without its value. Returns the snapshot's row with
   * `written` (0 or 1). `$1` namespace, `$2` key, then the lease token
   * (`fenced`), then the expected version (`ifMatch`).
   */
  delete(shape: ConditionShape): string
  /** Lease columns of a row, conditional on its row version; `fenced`: also on the lease token and expiry. */
  writeLease(fenced: boolean): string
  /** Live keys of a range in byte order: `$1` namespace, `$2` from, [`$3` to], then the limit. */
  scan(range: KeyRange): string
  /**
   * Every row of a namespace; announces the namespace (payload `<namespace>/`,
   * no key) in its own transaction: `destroy` is rare, its serialized commit costs nothing.
   */
  readonly destroy: string
}

/** Which conditions a one-statement write checks (each adds a parameter). */
export interface ConditionShape {
  /** A lease is given: its token must be the row's and unexpired. Otherwise no live lease may exist. */
  readonly fenced: boolean
  /** `ifMatch` is given: the row's version must equal it. */
  readonly ifMatch: boolean
}

/**
 * The parameters of {@link Statements.put}: `$1` namespace, `$2` key, `$3`
 * 16 random version characters (a first revision uses all of them, a later
 * one the first 8, as core's `newVersion`), `$4` writer (JSON), `$5` size,
 * `$6` value, `$7` its CRC-32, then the lease token (`fenced`), then the
 * expected version (`ifMatch`).
 */
export interface PutShape extends ConditionShape {
  /** `ifNoneMatch: '*'`: the key must hold no value. */
  readonly ifNoneMatch: boolean
}

/**
 * The revision `expr` in base 36, as core's `newVersion` writes it: the digits
 * of the 13 powers of 36 that fit a bigint, leading zeros trimmed (a revision
 * is at least 1). Every `36^i` is `2^2i * 3^2i` with `3^24 < 2^53`, so
 * `power(36, i)` is exact as a double.
 */
function base36(expr: string): string {
  return `(SELECT ltrim(string_agg(substr('0123456789abcdefghijklmnopqrstuvwxyz', ((${expr}) / power(36, i)::bigint % 36)::int + 1, 1), '' ORDER BY i DESC), '0')
     FROM generate_series(0, 12) i)`
}

/** The columns `row-codec.ts` decodes, in its order. */
export const STATE_COLUMNS =
  'e.row_version, e.version, e.revision, e.writer, e.updated_at, e.size, e.value_crc, e.lease_holder, e.lease_token, e.lease_ttl_ms, e.lease_expires_at, e.fence'

/** The column names of {@link STATE_COLUMNS}, as an answer names them. */
export const STATE_NAMES = STATE_COLUMNS.split(', ').map((column) => column.slice('e.'.length))
/** The columns of a read (and of a write's snapshot): the database clock and the state. */
const READ_NAMES = ['now_ms', ...STATE_NAMES]

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
  // Every statement is declared with the columns it answers (answer-check.ts).
  const rowVersion = ['row_version']
  // The lease guard of a fenced write, in the write statement itself, on
  // the database clock: the token must still be the row's and unexpired at
  // the moment the row is written (row_version alone would accept a lease
  // that expired between the read and the write).
  const guard = (fenced: boolean, tokenParam: number) =>
    fenced ? ` AND lease_token = $${tokenParam} AND lease_expires_at > ${NOW_MS}` : ''
  const nextRowVersion = `nextval('${schema}.${ROW_VERSIONS}')`
  // The conditions of a one-statement write on the row `t` as it is when
  // written: PostgreSQL re-checks them on the newest row version once it
  // holds the row lock (READ COMMITTED), and NOW_MS is evaluated then.
  const conditions = (shape: ConditionShape, firstParam: number) => {
    let next = firstParam
    const parts = [
      shape.fenced
        ? `t.lease_token = $${next++} AND t.lease_expires_at > ${NOW_MS}`
        : `(t.lease_holder IS NULL OR t.lease_expires_at <= ${NOW_MS})`,
    ]
    if (shape.ifMatch) parts.push(`t.version = $${next++}`)
    return parts.join(' AND ')
  }
  // The row as the statement's snapshot saw it, with the database clock: what
  // the backend judges a refusal by (core's rules). A refusal the snapshot
  // does not explain was a concurrent write: the backend sends the statement again.
  const snapshot = `snapshot AS (${read(false)})`
  const putCache = new Map<string, string>()
  const deleteCache = new Map<string, string>()
  return {
    read: declareAnswer(read(false), READ_NAMES),
    readWithValue: declareAnswer(read(true), [...READ_NAMES, 'value']),
    insert: declareAnswer(
      `INSERT INTO ${table} (namespace, key, version, revision, writer, updated_at, size, value,
        value_crc, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
      ON CONFLICT (namespace, key) DO NOTHING RETURNING row_version`,
      rowVersion,
    ),
    announce: declareAnswer(
      `SELECT set_config('synchronous_commit', 'off', true), pg_notify(${channel}, $1 || '/' || $2)`,
      HINT_COLUMNS,
    ),
    announceKeys: announceKeysSql(schema),
    put: (shape) => {
      const id = `${shape.fenced}/${shape.ifMatch}/${shape.ifNoneMatch}`
      let text = putCache.get(id)
      if (text !== undefined) return text
      const set = `version = ${base36('t.revision + 1')} || '.' || left($3, 8), revision = t.revision + 1,
          writer = $4, updated_at = ${NOW_MS}, size = $5, value = $6, value_crc = $7,
          row_version = ${nextRowVersion}`
      const where = `${conditions(shape, 8)}${shape.ifNoneMatch ? ' AND t.version IS NULL' : ''}`
      // Without a lease or an expected version a key without a row is
      // created (an upsert); with either, the row must exist already.
      const write =
        shape.fenced || shape.ifMatch
          ? `UPDATE ${table} t SET ${set} WHERE t.namespace = $1 AND t.key = $2 AND ${where}`
          : `INSERT INTO ${table} AS t (namespace, key, version, revision, writer, updated_at, size,
               value, value_crc, fence)
             VALUES ($1, $2, '1.' || $3, 1, $4, ${NOW_MS}, $5, $6, $7, 0)
             ON CONFLICT (namespace, key) DO UPDATE SET ${set} WHERE ${where}`
      text = `WITH ${snapshot}, written AS (${write} RETURNING t.version, t.updated_at)
        SELECT s.*, w.version AS written_version, w.updated_at AS written_updated_at
        FROM snapshot s LEFT JOIN written w ON true`
      declareAnswer(text, [...READ_NAMES, 'written_version', 'written_updated_at'])
      putCache.set(id, text)
      return text
    },
    delete: (shape) => {
      const id = `${shape.fenced}/${shape.ifMatch}`
      let text = deleteCache.get(id)
      if (text !== undefined) return text
      const where = `t.namespace = $1 AND t.key = $2 AND t.version IS NOT NULL AND ${conditions(shape, 3)}`
      // A key that never had a lease (fence 0) loses its row; one that did
      // keeps it without a value, for its fencing counter. The two
      // conditions exclude each other, so at most one sub-statement writes.
      text = `WITH ${snapshot},
        removed AS (DELETE FROM ${table} t WHERE ${where} AND t.fence = 0 RETURNING 1),
        emptied AS (UPDATE ${table} t SET version = NULL, revision = t.revision + 1, writer = NULL,
            updated_at = ${NOW_MS}, size = 0, value = NULL, value_crc = NULL,
            row_version = ${nextRowVersion}
          WHERE ${where} AND t.fence > 0 RETURNING 1)
        SELECT s.*, (SELECT count(*) FROM removed) + (SELECT count(*) FROM emptied) AS written
        FROM snapshot s`
      declareAnswer(text, [...READ_NAMES, 'written'])
      deleteCache.set(id, text)
      return text
    },
    // Lease steps change no value and announce nothing (the contract promises them no hint).
    writeLease: (fenced) =>
      declareAnswer(
        `UPDATE ${table} SET lease_holder = $4, lease_token = $5, lease_ttl_ms = $6,
         lease_expires_at = $7, fence = $8, row_version = ${nextRowVersion}
       WHERE namespace = $1 AND key = $2 AND row_version = $3${guard(fenced, 9)}
       RETURNING row_version`,
        rowVersion,
      ),
    scan: (range) =>
      declareAnswer(
        `SELECT key, version, size, updated_at FROM ${table}
       WHERE namespace = $1 AND version IS NOT NULL AND key ${range.inclusive ? '>=' : '>'} $2
       ${range.to === undefined ? '' : 'AND key < $3'}
       ORDER BY key COLLATE "C" LIMIT $${range.to === undefined ? 3 : 4}`,
        ['key', 'version', 'size', 'updated_at'],
      ),
    destroy: declareAnswer(
      `WITH d AS (DELETE FROM ${table} WHERE namespace = $1 RETURNING 1)
      SELECT pg_notify(${channel}, $1 || '/') FROM (SELECT count(*) FROM d) c`,
      ['pg_notify'],
    ),
  }
}
