import type { KeyRange } from '@agent-state/core'
import { declareAnswer } from './answer-check.js'
import { ENTRIES_TABLE, ROW_VERSIONS } from './schema.js'
import { FENCED_PUT_FUNCTION } from './schema-fenced-put.js'
import {
  DELETE_FUNCTION,
  GET_FUNCTION,
  NOW_MS,
  PUT_FUNCTION,
  READ_FUNCTION,
  STATE_COLUMNS,
} from './schema-functions.js'

export { NOW_MS, STATE_COLUMNS } from './schema-functions.js'

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
   * the value in `readWithValue`, by a call of the schema's read functions
   * (schema-functions.ts): one row always (a left join on the clock), its
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
   * A `put` in ONE statement (one round trip), a call of the schema's put
   * function (schema-functions.ts, whose plans each server connection
   * keeps): writes the value only if the contract's conditions hold on the
   * row as it is when written (lease free or, `fenced`, the given token
   * unexpired, on the database clock;
   * `ifMatch`/`ifNoneMatch`), and returns the row as the statement's snapshot
   * saw it (`STATE_COLUMNS` and `now_ms`, which the backend judges a refusal
   * by) with `written_version`/`written_updated_at` (null when nothing was
   * written). See {@link PutShape} for the parameters.
   */
  put(shape: PutShape): string
  /**
   * A `put` fenced by another key's lease (`PutOptions.fence`), in ONE
   * statement as {@link Statements.put}: a call of the schema's fenced put
   * function (schema-fenced-put.ts), which locks the fence key's row
   * `FOR SHARE` before the write. `put`'s parameters, then the fence key and
   * its lease token. Its answer is `put`'s with `fence_lost` (true: the fence
   * is not the fence key's current, unexpired lease, nothing written) and
   * `fence_token` (the fence key's lease token, null when none).
   */
  fencedPut(shape: PutShape): string
  /**
   * A `delete` in ONE statement, a call of the schema's delete function, as
   * {@link Statements.put}: removes the row of a key that never had a
   * lease, keeps the row of one that did (its
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

/** The column names of {@link STATE_COLUMNS}, as an answer names them. */
export const STATE_NAMES = STATE_COLUMNS.split(', ').map((column) => column.slice('e.'.length))
/** The columns of a read (and of a write's snapshot): the database clock and the state. */
const READ_NAMES = ['now_ms', ...STATE_NAMES]

/**
 * The write functions' lease token and expected version (schema-functions.ts):
 * the next parameters from `$first` for those the shape gives, typed nulls
 * for the others.
 */
function optionalParams(shape: ConditionShape, first: number): string {
  let next = first
  const token = shape.fenced ? `$${next++}::bigint` : 'NULL::bigint'
  const ifMatch = shape.ifMatch ? `$${next++}::text` : 'NULL::text'
  return `${token}, ${ifMatch}`
}

/** How many parameters {@link optionalParams} takes for `shape`. */
function optionalCount(shape: ConditionShape): number {
  return (shape.fenced ? 1 : 0) + (shape.ifMatch ? 1 : 0)
}

/** The answer of {@link Statements.put}: the snapshot, then what was written. */
const PUT_NAMES = [...READ_NAMES, 'written_version', 'written_updated_at']

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
  // Every statement is declared with the columns it answers (answer-check.ts).
  const rowVersion = ['row_version']
  // The lease guard of a fenced write, in the write statement itself, on
  // the database clock: the token must still be the row's and unexpired at
  // the moment the row is written (row_version alone would accept a lease
  // that expired between the read and the write).
  const guard = (fenced: boolean, tokenParam: number) =>
    fenced ? ` AND lease_token = $${tokenParam} AND lease_expires_at > ${NOW_MS}` : ''
  const nextRowVersion = `nextval('${schema}.${ROW_VERSIONS}')`
  const putCache = new Map<string, string>()
  const fencedPutCache = new Map<string, string>()
  const deleteCache = new Map<string, string>()
  const scanCache = new Map<string, string>()
  return {
    read: declareAnswer(`SELECT * FROM ${schema}.${READ_FUNCTION}($1, $2)`, READ_NAMES),
    readWithValue: declareAnswer(`SELECT * FROM ${schema}.${GET_FUNCTION}($1, $2)`, [
      ...READ_NAMES,
      'value',
    ]),
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
      const rest = optionalParams(shape, 8)
      text = declareAnswer(
        `SELECT * FROM ${schema}.${PUT_FUNCTION}($1, $2, $3, $4, $5, $6, $7, ${rest}, ${shape.ifNoneMatch})`,
        PUT_NAMES,
      )
      putCache.set(id, text)
      return text
    },
    fencedPut: (shape) => {
      const id = `${shape.fenced}/${shape.ifMatch}/${shape.ifNoneMatch}`
      let text = fencedPutCache.get(id)
      if (text !== undefined) return text
      const rest = optionalParams(shape, 8)
      const fenceKey = 8 + optionalCount(shape)
      text = declareAnswer(
        `SELECT * FROM ${schema}.${FENCED_PUT_FUNCTION}($1, $2, $3, $4, $5, $6, $7, ${rest}, ${shape.ifNoneMatch}, $${fenceKey}::text, $${fenceKey + 1}::bigint)`,
        [...PUT_NAMES, 'fence_lost', 'fence_token'],
      )
      fencedPutCache.set(id, text)
      return text
    },
    delete: (shape) => {
      const id = `${shape.fenced}/${shape.ifMatch}`
      let text = deleteCache.get(id)
      if (text !== undefined) return text
      text = declareAnswer(
        `SELECT * FROM ${schema}.${DELETE_FUNCTION}($1, $2, ${optionalParams(shape, 3)})`,
        [...READ_NAMES, 'written'],
      )
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
    scan: (range) => {
      const id = `${range.inclusive}/${range.to !== undefined}`
      let text = scanCache.get(id)
      if (text !== undefined) return text
      text = declareAnswer(
        `SELECT key, version, size, updated_at FROM ${table}
       WHERE namespace = $1 AND version IS NOT NULL AND key ${range.inclusive ? '>=' : '>'} $2
       ${range.to === undefined ? '' : 'AND key < $3'}
       ORDER BY key COLLATE "C" LIMIT $${range.to === undefined ? 3 : 4}`,
        ['key', 'version', 'size', 'updated_at'],
      )
      scanCache.set(id, text)
      return text
    },
    destroy: declareAnswer(
      `WITH d AS (DELETE FROM ${table} WHERE namespace = $1 RETURNING 1)
      SELECT pg_notify(${channel}, $1 || '/') FROM (SELECT count(*) FROM d) c`,
      ['pg_notify'],
    ),
  }
}
