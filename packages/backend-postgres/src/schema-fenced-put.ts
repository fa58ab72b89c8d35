import { NOW_MS, putStatement, readStatement, STATE_TYPES } from './schema-functions.js'

/**
 * Migration 4's SQL: the put fenced by another key's lease
 * (`PutOptions.fence`, `capabilities.crossKeyFence`) as a PL/pgSQL function
 * of its own, beside migration 3's `agent_state_put`, which stays as it was:
 * a plain put runs no statement and no lock more than before. Frozen with
 * the migration, as migration 3's text is (schema-functions.ts).
 *
 * Why `FOR SHARE`: under READ COMMITTED a plain read of the fence key's row
 * sees the lease as of that read. An `acquireLease` of the fence key could
 * commit between that read and the put's own commit, and the write fenced by
 * the superseded lease would land after the takeover. Reading the fence row
 * `FOR SHARE` holds a row lock that conflicts with the `FOR NO KEY UPDATE`
 * lock every `UPDATE` of that row takes (each lease step writes the lease
 * columns with an `UPDATE`; so do a put and a delete of the fence key), until
 * the put's transaction ends: a takeover, renewal or release of the fence key
 * waits for every fenced write in flight to commit, so it is ordered after
 * them. `FOR KEY SHARE` would not do: it does not conflict with an update
 * that changes no key column. And a put that finds the row locked or updated
 * meanwhile waits for that transaction, then reads the row's newest committed
 * version (READ COMMITTED follows the update chain for a locking read): a
 * write started after a takeover committed is `LEASE_LOST`, whatever its
 * snapshot saw.
 *
 * The call is one statement sent by the client, an autocommit transaction:
 * the share lock lives only while the server executes it, bounded by
 * `lock_timeout` for each wait and `statement_timeout` for the whole, as every
 * other write's row lock (README, "A frozen client blocks nobody past its
 * statement"). Nothing of it is session state, so PgBouncer's transaction
 * pooling runs it on any server connection.
 */

/** The name of the fenced put function (in the backend's schema). */
export const FENCED_PUT_FUNCTION = 'agent_state_put_fenced'

/**
 * Migration 4: the fenced put function in `schema`, over the entries table
 * `table` and the row-version sequence `rowVersions` (both schema-qualified).
 * Its parameters: `agent_state_put`'s (`p_token`, the written
 * key's own lease token, is null from this package: core refuses `lease`
 * with `fence`; it stays so that the put's own statement is shared word for
 * word), then `p_fence_key` and `p_fence_token`, the fencing lease.
 *
 * First the fence key's row, `FOR SHARE`, and then the clock (read after the
 * lock is held: a wait for the lock must not leave an earlier time behind).
 * A fence that is not that row's current, unexpired lease (no row, another
 * token, released, expired) answers the written key's row as read, nothing
 * written, `fence_lost` true. Otherwise `agent_state_put`'s statement, whose
 * conditions also require the fence unexpired when the row is written (on
 * the database clock, as the own lease's expiry: after any wait for the
 * written row's lock), answering `fence_lost` false. `fence_token` is the
 * fence key's lease token as the locked read saw it (null: none).
 */
export function fencedPutMigration(schema: string, table: string, rowVersions: string): string {
  const extension = {
    condition: `v_fence_expires_at > ${NOW_MS}`,
    columns: 'false AS fence_lost, v_fence_token AS fence_token',
  }
  return `CREATE FUNCTION ${schema}.${FENCED_PUT_FUNCTION}(p_namespace text, p_key text, p_random text,
    p_writer text, p_size bigint, p_value bytea, p_crc bigint, p_token bigint, p_if_match text,
    p_if_none_match boolean, p_fence_key text, p_fence_token bigint)
  RETURNS TABLE (now_ms bigint, ${STATE_TYPES}, written_version text, written_updated_at bigint,
    fence_lost boolean, fence_token bigint)
  LANGUAGE plpgsql AS $fn$
  #variable_conflict use_column
  DECLARE
    v_fence_token bigint;
    v_fence_expires_at bigint;
  BEGIN
    SELECT f.lease_token, f.lease_expires_at INTO v_fence_token, v_fence_expires_at
      FROM ${table} f WHERE f.namespace = p_namespace AND f.key = p_fence_key FOR SHARE;
    IF v_fence_token IS DISTINCT FROM p_fence_token OR v_fence_expires_at <= ${NOW_MS} THEN
      RETURN QUERY SELECT r.*, NULL::text, NULL::bigint, true, v_fence_token
        FROM (${readStatement(false, table)}) r;
    ELSIF p_token IS NULL AND p_if_match IS NULL THEN
      RETURN QUERY ${putStatement('upsert', table, rowVersions, extension)};
    ELSE
      RETURN QUERY ${putStatement('update', table, rowVersions, extension)};
    END IF;
  END $fn$;`
}
