import { declareAnswer } from './answer-check.js'
import { ENTRIES_TABLE, ROW_VERSIONS } from './schema.js'
import { announceKeysSql, NOW_MS, STATE_COLUMNS, STATE_NAMES } from './statements.js'

/**
 * The SQL of the native daemon queue (native-queue.ts), for one schema. An
 * operation is ONE transaction in two round trips, every statement an
 * unnamed extended-protocol query pipelined on one pooled connection (no
 * session state: PgBouncer's transaction pooling keeps a transaction on one
 * server connection and may hand the next one to another):
 *
 * 1. {@link QueueStatements.begin}, {@link QueueStatements.limits},
 *    {@link QueueStatements.lock} (the queue's head and tail rows),
 *    {@link QueueStatements.load} (every row the operation reads, with the
 *    database clock taken after the locks);
 * 2. one {@link QueueStatements.store} or {@link QueueStatements.remove} per
 *    row written, {@link QueueStatements.commit}, then
 *    {@link QueueStatements.announce} in a transaction of its own (as every
 *    write's change hint, statements.ts).
 *
 * Every statement is declared with the columns it answers (answer-check.ts):
 * a pooler's foreign answer reaches a transaction's first statement (`BEGIN`,
 * or the hint after `COMMIT`), and every answer after it is then shifted by
 * one, so the first round trip fails as a lost connection before anything
 * is written, whatever columns the foreign answer has (`BEGIN` has none, the
 * `limits` after it has two).
 */
export interface QueueStatements {
  /** Opens the transaction (no columns). */
  readonly begin: string
  /**
   * `lock_timeout` (`$1`) and `idle_in_transaction_session_timeout` (`$2`)
   * for this transaction only (`set_config(…, true)`): a client stopped
   * between the two round trips (SIGSTOP, a hung host) holds the queue's row
   * locks at most that long.
   */
  readonly limits: string
  /**
   * Locks the rows of `$2` (keys) `FOR UPDATE` and those of `$3` `FOR SHARE`,
   * each set in key order (a consistent order, no deadlock between operations):
   * `$1` namespace. An append locks the tail and shares the head (producers
   * queue behind each other, never behind a consumer's read); a claim or a
   * settlement locks the head.
   */
  readonly lock: string
  /**
   * The database clock and, for every wanted key, its state columns and
   * value (`row_version` null when it has no row): `$1` namespace, `$2` keys
   * known in advance, then the event keys found from the locked records:
   * `$3` event prefix, `$4` digits, `$5` tail key and `$6` how many sequence
   * numbers from the tail's `next` (an append's new events), `$7` head key and
   * `$8` whether the head's `head - 1` and `head` (a claim's events). The
   * numbers are found by a pattern, never a JSON cast (a damaged record must
   * not abort the transaction): the JavaScript side decodes every record and
   * reports a key it needed but did not get as `CORRUPT`. One row with null
   * `wanted` when no key is.
   */
  readonly load: string
  /** Writes a row whole (the `insert` columns of statements.ts), creating it if needed. */
  readonly store: string
  /** Removes the row of `$2` (`$1` namespace): a key with no value, lease or fence left. */
  readonly remove: string
  /** Commits the transaction (no columns). */
  readonly commit: string
  /** Ends a transaction refused or failed before its commit (no columns). */
  readonly rollback: string
  /** The change hints of the keys `$2` (`<namespace>/<key>`, `$1` namespace), as `Statements.announce`. */
  readonly announce: string
}

/** The answer of a command that returns no rows (`BEGIN`, `COMMIT`, an `INSERT` without `RETURNING`…). */
const NO_COLUMNS: readonly string[] = []

/** Builds the queue statements of the backend in `schema` (an identifier checked by the options schema). */
export function buildQueueStatements(schema: string): QueueStatements {
  const table = `${schema}.${ENTRIES_TABLE}`
  const locked = (keys: string, strength: string) =>
    `SELECT e.key FROM ${table} e WHERE e.namespace = $1 AND e.key = ANY(${keys}::text[])
     ORDER BY e.key COLLATE "C" FOR ${strength}`
  // The first `"<field>":<digits>` of a record: the field is the record's own (the runtime writes
  // it second, after `format`, and a JSON string cannot hold an unescaped quote).
  const field = (name: string, key: string) =>
    `(SELECT substring(encode(r.value, 'escape') FROM '"${name}":([0-9]{1,15})')::bigint
      FROM ${table} r WHERE r.namespace = $1 AND r.key = ${key})`
  return {
    begin: declareAnswer('BEGIN', NO_COLUMNS),
    limits: declareAnswer(
      `SELECT set_config('lock_timeout', $1, true),
      set_config('idle_in_transaction_session_timeout', $2, true)`,
      ['set_config', 'set_config'],
    ),
    lock: declareAnswer(
      `WITH x AS (${locked('$2', 'UPDATE')}), s AS (${locked('$3', 'SHARE')})
      SELECT key FROM x UNION ALL SELECT key FROM s`,
      ['key'],
    ),
    load: declareAnswer(
      `WITH seqs AS (
        SELECT generate_series(t.n, t.n + $6 - 1) AS s FROM (SELECT ${field('next', '$5')} AS n) t
        UNION SELECT h.n + d FROM (SELECT ${field('head', '$7')} AS n) h, (VALUES (-1), (0)) v(d)
          WHERE $8
      ),
      wanted AS (
        SELECT unnest($2::text[]) AS key
        UNION SELECT $3 || lpad(s::text, $4, '0') FROM seqs WHERE s >= 0
      )
      SELECT w.key AS wanted, n.now_ms, ${STATE_COLUMNS}, e.value
      FROM (SELECT ${NOW_MS} AS now_ms) n
      LEFT JOIN (wanted w LEFT JOIN ${table} e ON e.namespace = $1 AND e.key = w.key) ON true`,
      ['wanted', 'now_ms', ...STATE_NAMES, 'value'],
    ),
    store: declareAnswer(
      `INSERT INTO ${table} (namespace, key, version, revision, writer, updated_at, size, value,
        value_crc, lease_holder, lease_token, lease_ttl_ms, lease_expires_at, fence)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
      ON CONFLICT (namespace, key) DO UPDATE SET version = EXCLUDED.version,
        revision = EXCLUDED.revision, writer = EXCLUDED.writer, updated_at = EXCLUDED.updated_at,
        size = EXCLUDED.size, value = EXCLUDED.value, value_crc = EXCLUDED.value_crc,
        lease_holder = EXCLUDED.lease_holder, lease_token = EXCLUDED.lease_token,
        lease_ttl_ms = EXCLUDED.lease_ttl_ms, lease_expires_at = EXCLUDED.lease_expires_at,
        fence = EXCLUDED.fence, row_version = nextval('${schema}.${ROW_VERSIONS}')`,
      NO_COLUMNS,
    ),
    remove: declareAnswer(`DELETE FROM ${table} WHERE namespace = $1 AND key = $2`, NO_COLUMNS),
    commit: declareAnswer('COMMIT', NO_COLUMNS),
    rollback: declareAnswer('ROLLBACK', NO_COLUMNS),
    announce: announceKeysSql(schema),
  }
}
