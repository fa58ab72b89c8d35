/**
 * Migration 3's SQL: the value writes (`put`, `delete`) and the key reads
 * (`get`, and the state read of `head` and the lease steps) as PL/pgSQL
 * functions in the backend's schema. Frozen with the migration, and with it
 * everything here its text is built from ({@link NOW_MS} and
 * {@link STATE_COLUMNS} included, which other statements share): never edit
 * a released one; a change is a new migration (`CREATE OR REPLACE FUNCTION`).
 *
 * Why functions: each write was one unnamed statement, a CTE that the server
 * parsed, analysed and planned at every execution, which cost more server CPU
 * than executing it (`benchmarks/FINDINGS.md`, PostgreSQL, named prepared
 * statements). PL/pgSQL keeps the plans of a function's statements per server
 * connection (the generic plan after five custom ones, as a named statement
 * would), and the call that replaces the CTE is cheap to parse and plan. Unlike
 * a named prepared statement this is no state a client must find again: behind
 * PgBouncer's transaction pooling any server connection runs the function, and
 * one that never did plans it at its first call.
 *
 * Each function runs one statement per call (`RETURN QUERY` of one CTE): the
 * row as that statement's snapshot saw it, with the database clock, and what
 * it wrote. The write's conditions are checked on the row as it is when
 * written: PostgreSQL re-checks them on the newest row version once it holds
 * the row lock (READ COMMITTED), and `clock_timestamp()` is read then. So a
 * write keeps the one-statement atomicity of the CTE it replaces, and its row
 * lock lives only while the server executes that statement.
 */

/** The name of the put function (in the backend's schema). */
export const PUT_FUNCTION = 'agent_state_put'
/** The name of the delete function (in the backend's schema). */
export const DELETE_FUNCTION = 'agent_state_delete'
/** The name of the read function without the value (`head`, the lease steps). */
export const READ_FUNCTION = 'agent_state_read'
/** The name of the read function with the value (`get`). */
export const GET_FUNCTION = 'agent_state_get'

/**
 * Milliseconds since the epoch on the database clock. `clock_timestamp()`,
 * not `now()`: `now()` is the start of the transaction, and a statement
 * queued behind a lock would judge expiry by a time already past.
 */
export const NOW_MS = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint'

/** The columns `row-codec.ts` decodes, in its order. */
export const STATE_COLUMNS =
  'e.row_version, e.version, e.revision, e.writer, e.updated_at, e.size, e.value_crc, e.lease_holder, e.lease_token, e.lease_ttl_ms, e.lease_expires_at, e.fence'

/** The SQL types of {@link STATE_COLUMNS}, as the functions declare them. */
export const STATE_TYPES =
  'row_version bigint, version text, revision bigint, writer text, updated_at bigint, size bigint, value_crc bigint, lease_holder text, lease_token bigint, lease_ttl_ms bigint, lease_expires_at bigint, fence bigint'

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

/**
 * The conditions of a write on the row `t`: with a token (`p_token`), it
 * must be the row's and unexpired; without one, no live lease may exist
 * (a null comparison, a row without a lease, is false); with `p_if_match`,
 * the row's version must equal it.
 */
const WRITE_CONDITIONS = `CASE WHEN p_token IS NULL
      THEN (t.lease_holder IS NULL OR t.lease_expires_at <= ${NOW_MS})
      ELSE (t.lease_token = p_token AND t.lease_expires_at > ${NOW_MS}) END
    AND (p_if_match IS NULL OR t.version = p_if_match)`

/** The row of the key (`p_namespace`, `p_key`) and the clock, as the statement's snapshot saw them. */
function snapshot(table: string): string {
  return `snapshot AS (${readStatement(false, table)})`
}

/**
 * `put`: `p_random` is 16 random version characters (a first revision uses
 * all of them, a later one the first 8, as core's `newVersion`); `p_writer`
 * the writer as JSON; `p_token` the lease token (null: no lease given);
 * `p_if_match` the expected version (null: none); `p_if_none_match` create
 * only. Without a lease or an expected version a key without a row is
 * created (an upsert); with either, the row must exist already.
 */
function putFunction(schema: string, table: string, rowVersions: string): string {
  return `CREATE FUNCTION ${schema}.${PUT_FUNCTION}(p_namespace text, p_key text, p_random text,
    p_writer text, p_size bigint, p_value bytea, p_crc bigint, p_token bigint, p_if_match text,
    p_if_none_match boolean)
  RETURNS TABLE (now_ms bigint, ${STATE_TYPES}, written_version text, written_updated_at bigint)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  BEGIN
    IF p_token IS NULL AND p_if_match IS NULL THEN
      RETURN QUERY ${putStatement('upsert', table, rowVersions)};
    ELSE
      RETURN QUERY ${putStatement('update', table, rowVersions)};
    END IF;
  END $fn$;`
}

/**
 * What a statement of a later migration adds to {@link putStatement}: a
 * condition on the row when written, and columns of its answer. Without
 * it the text is migration 3's, byte for byte (frozen: see above).
 */
export interface PutStatementExtension {
  /** ANDed to the conditions the row must meet when written. */
  readonly condition: string
  /** More columns of the answer, after the written version's (a select list, no leading comma). */
  readonly columns: string
}

/**
 * The put function's statement (its parameters by name): an `upsert` for a
 * write without a lease or an expected version, an `update` of the existing
 * row otherwise. Exported for `bench:postgres-functions`, which runs the
 * same statement inline to measure what the function saves, and for
 * migration 4's fenced put (schema-fenced-put.ts), which passes `extension`.
 */
export function putStatement(
  form: 'upsert' | 'update',
  table: string,
  rowVersions: string,
  extension?: PutStatementExtension,
): string {
  const set = `version = ${base36('t.revision + 1')} || '.' || left(p_random, 8), revision = t.revision + 1,
          writer = p_writer, updated_at = ${NOW_MS}, size = p_size, value = p_value, value_crc = p_crc,
          row_version = nextval('${rowVersions}')`
  const extra = extension === undefined ? '' : ` AND ${extension.condition}`
  const where = `${WRITE_CONDITIONS} AND (NOT p_if_none_match OR t.version IS NULL)${extra}`
  const write =
    form === 'upsert'
      ? `INSERT INTO ${table} AS t (namespace, key, version, revision, writer, updated_at,
            size, value, value_crc, fence)
          VALUES (p_namespace, p_key, '1.' || p_random, 1, p_writer, ${NOW_MS}, p_size, p_value, p_crc, 0)
          ON CONFLICT (namespace, key) DO UPDATE SET ${set} WHERE ${where}`
      : `UPDATE ${table} t SET ${set}
          WHERE t.namespace = p_namespace AND t.key = p_key AND ${where}`
  return `WITH ${snapshot(table)},
        written AS (${write}
          RETURNING t.version, t.updated_at)
        SELECT s.*, w.version AS written_version, w.updated_at AS written_updated_at${extension === undefined ? '' : `, ${extension.columns}`}
        FROM snapshot s LEFT JOIN written w ON true`
}

/**
 * `delete`: removes the row of a key that never had a lease, keeps the row
 * of one that did (its fencing counter) without its value. The two
 * conditions exclude each other, so at most one sub-statement writes.
 * `written` is 1 when a value was removed, else 0.
 */
function deleteFunction(schema: string, table: string, rowVersions: string): string {
  const where = `t.namespace = p_namespace AND t.key = p_key AND t.version IS NOT NULL AND ${WRITE_CONDITIONS}`
  return `CREATE FUNCTION ${schema}.${DELETE_FUNCTION}(p_namespace text, p_key text, p_token bigint,
    p_if_match text)
  RETURNS TABLE (now_ms bigint, ${STATE_TYPES}, written bigint)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY WITH ${snapshot(table)},
      removed AS (DELETE FROM ${table} t WHERE ${where} AND t.fence = 0 RETURNING 1),
      emptied AS (UPDATE ${table} t SET version = NULL, revision = t.revision + 1, writer = NULL,
          updated_at = ${NOW_MS}, size = 0, value = NULL, value_crc = NULL,
          row_version = nextval('${rowVersions}')
        WHERE ${where} AND t.fence > 0 RETURNING 1)
      SELECT s.*, (SELECT count(*) FROM removed) + (SELECT count(*) FROM emptied) FROM snapshot s;
  END $fn$;`
}

/**
 * The read functions' statement: the database clock and the key's state
 * columns, with the value when `withValue`; one row always (a left join on
 * the clock), its `row_version` null when the key has no row. Exported for
 * `bench:postgres-functions`, as {@link putStatement}.
 */
export function readStatement(withValue: boolean, table: string): string {
  return `SELECT n.now_ms, ${STATE_COLUMNS}${withValue ? ', e.value' : ''}
      FROM (SELECT ${NOW_MS} AS now_ms) n
      LEFT JOIN ${table} e ON e.namespace = p_namespace AND e.key = p_key`
}

function readFunction(schema: string, table: string, withValue: boolean): string {
  const name = withValue ? GET_FUNCTION : READ_FUNCTION
  return `CREATE FUNCTION ${schema}.${name}(p_namespace text, p_key text)
  RETURNS TABLE (now_ms bigint, ${STATE_TYPES}${withValue ? ', value bytea' : ''})
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  BEGIN
    RETURN QUERY ${readStatement(withValue, table)};
  END $fn$;`
}

/**
 * Migration 3: the write and read functions in `schema`, over the entries
 * table `table` and the row-version sequence `rowVersions` (both schema-qualified).
 */
export function functionsMigration(schema: string, table: string, rowVersions: string): string {
  return [
    putFunction(schema, table, rowVersions),
    deleteFunction(schema, table, rowVersions),
    readFunction(schema, table, false),
    readFunction(schema, table, true),
  ].join('\n')
}
