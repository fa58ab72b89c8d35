import { AgentStateError } from '@agent-state/core'
import type pg from 'pg'
import { assertOwnAnswer } from './answer-check.js'
import { fencedPutMigration } from './schema-fenced-put.js'
import { functionsMigration } from './schema-functions.js'

/**
 * The database layout and its migrations. Everything lives in one
 * PostgreSQL schema of its own (`agent_state` by default): the entries
 * table, the sequence of row versions, and the table recording which
 * migrations ran. Migrations run in one transaction under a
 * transaction-scoped advisory lock, so processes starting at once migrate
 * exactly once, and a migration killed halfway is rolled back whole
 * (PostgreSQL's DDL is transactional): the next start applies it again.
 */

/** The schema version this package writes and reads. */
export const SCHEMA_VERSION = 4

/** One row per migration applied: `version`, `description`, `applied_at`. */
export const MIGRATIONS_TABLE = 'agent_state_migrations'
/** One row per (namespace, key): value, writer, lease and fencing counter together. */
export const ENTRIES_TABLE = 'agent_state_entries'
/**
 * Schema 1's partial index of the keys that hold a value (`INCLUDE (version,
 * size, updated_at) WHERE version IS NOT NULL`); dropped by migration 2,
 * since it made every write a non-HOT update.
 */
export const LIVE_INDEX = 'agent_state_entries_live'
/** The sequence every write draws its row version from: a row version is never reused. */
export const ROW_VERSIONS = 'agent_state_row_versions'

/**
 * First key of the advisory lock (`'agst'` as an int4); the second is
 * `hashtext(schema)`, so backends in different schemas do not wait for
 * each other.
 */
export const MIGRATION_LOCK_CLASS = 0x61677374
/** Lock and statement limits of the migration transaction: DDL may wait for readers. */
const MIGRATION_TIMEOUT_MS = 30_000

interface Migration {
  readonly version: number
  readonly description: string
  readonly sql: (schema: string) => string
}

/**
 * Migrations in order. Append only; never edit a released one.
 * Keys are `text COLLATE "C"` (byte order: see `key-layout.ts`); values
 * `bytea` with the CRC-32 of their bytes in `value_crc`; times are
 * milliseconds since the epoch on the database clock (`clock_timestamp()`).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: 'entries table, live-key index, row-version sequence',
    sql: (s) => `
      CREATE SEQUENCE ${s}.${ROW_VERSIONS} AS bigint;
      CREATE TABLE ${s}.${ENTRIES_TABLE} (
        namespace text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        row_version bigint NOT NULL DEFAULT nextval('${s}.${ROW_VERSIONS}'),
        version text,
        revision bigint NOT NULL,
        writer text,
        updated_at bigint NOT NULL,
        size bigint NOT NULL,
        value bytea,
        value_crc bigint,
        lease_holder text,
        lease_token bigint,
        lease_ttl_ms bigint,
        lease_expires_at bigint,
        fence bigint NOT NULL,
        PRIMARY KEY (namespace, key),
        CHECK ((version IS NULL) = (value IS NULL) AND (value IS NULL) = (value_crc IS NULL)),
        CHECK ((lease_holder IS NULL) = (lease_token IS NULL))
      );
      CREATE INDEX ${LIVE_INDEX} ON ${s}.${ENTRIES_TABLE} (namespace, key)
        INCLUDE (version, size, updated_at) WHERE version IS NOT NULL;`,
  },
  {
    version: 2,
    description:
      'HOT updates: live-key index dropped (listings use the primary key), fillfactor 90',
    // A write changes version, updated_at and size, which the live-key index
    // covered (and `version` is its predicate), so no update could be HOT:
    // each wrote new entries in both indexes. The primary key (namespace, key)
    // is in the same byte order (COLLATE "C") and covers no column an update
    // changes; a listing reads version, size and updated_at from the heap.
    // Fillfactor 90: the free tenth of each page is where a HOT update puts
    // the row's next version. Measured (`bench:postgres-hot`, 1 KiB values):
    // at 100, 2% of updates found no room and were not HOT; 90 and 80 none,
    // and 80 made a listing page read 19% more buffers than 90. It applies to
    // pages filled from now on (an old table's full pages keep their rows
    // until VACUUM FULL or a rewrite; pruning still makes room on them).
    sql: (s) => `
      DROP INDEX ${s}.${LIVE_INDEX};
      ALTER TABLE ${s}.${ENTRIES_TABLE} SET (fillfactor = 90);`,
  },
  {
    version: 3,
    description:
      'value writes and key reads as PL/pgSQL functions (plans kept per server connection)',
    // The table is unchanged: a process of the previous release that is
    // already running keeps writing with its own statements; one starting
    // after this migration refuses the newer schema (INCOMPATIBLE_SCHEMA).
    sql: (s) => functionsMigration(s, `${s}.${ENTRIES_TABLE}`, `${s}.${ROW_VERSIONS}`),
  },
  {
    version: 4,
    description: 'put fenced by the lease of another key (crossKeyFence): agent_state_put_fenced',
    // A function of its own: the plain put keeps migration 3's function and
    // does no more work. The table is unchanged; as for migration 3, a running
    // process of the previous release keeps working, one started afterwards
    // refuses the newer schema.
    sql: (s) => fencedPutMigration(s, `${s}.${ENTRIES_TABLE}`, `${s}.${ROW_VERSIONS}`),
  },
]

/**
 * Reads the schema version without writing anything: 0 when the schema or
 * its migrations table does not exist yet.
 */
export async function readSchemaVersion(
  client: pg.ClientBase,
  schema: string,
  checkAnswers = true,
): Promise<number> {
  if (!(await tableExists(client, schema, MIGRATIONS_TABLE, checkAnswers))) return 0
  const rows = await readRows<{ version: number | null }>(
    client,
    `SELECT max(version) AS version FROM ${schema}.${MIGRATIONS_TABLE}`,
    [],
    'version',
    checkAnswers,
  )
  return rows[0]?.version ?? 0
}

/**
 * The rows of a read of the migration step, once its answer is known to be
 * this statement's: its one column is `column`. PgBouncer 1.18 in transaction
 * pooling returns to its pool a server connection whose client died with a
 * pipelined statement still running (a writer killed between its write's
 * answer and its change hint's), and hands it to the next client: that
 * client's first statement receives the dead client's answer as its own, and
 * its own answer then either follows (node-postgres fails the connection) or
 * is dropped. Believed, the foreign row says "the table exists" of a missing
 * table. A foreign answer is thrown as a lost connection (no SQLSTATE:
 * `INDETERMINATE`, the connection discarded), which the open retries on a
 * fresh one. Only the reads before the transaction need it: inside it, every
 * statement stays on the server connection its `BEGIN` got.
 */
async function readRows<R extends pg.QueryResultRow>(
  client: pg.ClientBase,
  sql: string,
  params: unknown[],
  column: string,
  check: boolean,
): Promise<R[]> {
  const result = await client.query<R>(sql, params)
  if (check) assertOwnAnswer(result.fields, [column])
  return result.rows
}

/**
 * Whether the table exists, read from `pg_class` with the statement's own
 * snapshot. Not `to_regclass`: it goes through the backend's catalog cache,
 * which an advisory lock does not refresh, so a process that waited for
 * another's migration still saw "no table" (caught by the concurrent-start
 * test).
 */
async function tableExists(
  client: pg.ClientBase,
  schema: string,
  table: string,
  checkAnswers: boolean,
): Promise<boolean> {
  return exists(
    client,
    `SELECT 1 AS found FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2`,
    [schema, table],
    checkAnswers,
  )
}

/** Throws `INCOMPATIBLE_SCHEMA` when the database was migrated by a newer version of this package. */
export function assertSupportedVersion(version: number, schema: string): void {
  if (version > SCHEMA_VERSION) {
    throw new AgentStateError(
      'INCOMPATIBLE_SCHEMA',
      `The PostgreSQL schema "${schema}" has agent-state schema version ${version}; this version of @agent-state/postgres reads up to ${SCHEMA_VERSION}. Upgrade the package; the database was left untouched.`,
      { context: { schema, schemaVersion: version, supported: SCHEMA_VERSION } },
    )
  }
}

/** Test hooks of {@link migrate} (migration tests and their mutants); never set in production. */
export interface MigrationHooks {
  /** `false` skips the advisory lock: a mutant the concurrent-start test must catch. */
  readonly lock?: boolean
  /** Runs inside the transaction after a migration's DDL, before it is recorded. */
  readonly afterMigration?: (version: number) => Promise<void>
  /** Migrates up to this version instead of {@link SCHEMA_VERSION}: an older release's database. */
  readonly target?: number
  /** `false`: the reads take any answer for theirs (a mutant; see `readRows`). */
  readonly checkAnswers?: boolean
}

/** Whether `sql` (a read of one column named `found`) returns a row. */
async function exists(
  client: pg.ClientBase,
  sql: string,
  params: unknown[],
  checkAnswers: boolean,
): Promise<boolean> {
  return (await readRows(client, sql, params, 'found', checkAnswers)).length > 0
}

/**
 * Brings the schema to {@link SCHEMA_VERSION}. A database already there costs
 * two reads and no lock. Otherwise, in one transaction: take
 * `pg_advisory_xact_lock`, read the version again (another process may
 * have migrated meanwhile), refuse a newer one, create the schema when it is
 * missing, apply the missing migrations and record each. The lock goes with
 * the transaction (commit, rollback or a dropped connection), so it is no
 * session state and works through PgBouncer's transaction pooling.
 */
export async function migrate(
  client: pg.ClientBase,
  schema: string,
  hooks: MigrationHooks = {},
): Promise<void> {
  const target = hooks.target ?? SCHEMA_VERSION
  const check = hooks.checkAnswers ?? true
  const seen = await readSchemaVersion(client, schema, check)
  assertSupportedVersion(seen, schema)
  if (seen >= target) return
  await client.query('BEGIN')
  try {
    await client.query(
      `SET LOCAL lock_timeout = ${MIGRATION_TIMEOUT_MS};
       SET LOCAL statement_timeout = ${MIGRATION_TIMEOUT_MS};
       SET LOCAL idle_in_transaction_session_timeout = ${MIGRATION_TIMEOUT_MS}`,
    )
    if (hooks.lock !== false) {
      await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [
        MIGRATION_LOCK_CLASS,
        schema,
      ])
    }
    const version = await readSchemaVersion(client, schema, check)
    assertSupportedVersion(version, schema)
    if (version < target) {
      // Asked first: CREATE SCHEMA IF NOT EXISTS needs CREATE on the database
      // even when the schema exists, and a role owning only its schema lacks it.
      const named = 'SELECT 1 AS found FROM pg_namespace WHERE nspname = $1'
      if (!(await exists(client, named, [schema], check))) {
        await client.query(`CREATE SCHEMA ${schema}`)
      }
      if (version === 0 && (await tableExists(client, schema, ENTRIES_TABLE, check))) {
        throw new AgentStateError(
          'INCOMPATIBLE_SCHEMA',
          `The PostgreSQL schema "${schema}" has a ${ENTRIES_TABLE} table but no agent-state migrations record; it was left untouched`,
          { context: { schema, schemaVersion: null, supported: SCHEMA_VERSION } },
        )
      }
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${schema}.${MIGRATIONS_TABLE} (
           version integer PRIMARY KEY,
           description text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
         )`,
      )
      for (const migration of MIGRATIONS) {
        if (migration.version <= version || migration.version > target) continue
        await client.query(migration.sql(schema))
        await hooks.afterMigration?.(migration.version)
        await client.query(
          `INSERT INTO ${schema}.${MIGRATIONS_TABLE} (version, description) VALUES ($1, $2)`,
          [migration.version, migration.description],
        )
      }
    }
    await client.query('COMMIT')
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {})
    throw error
  }
}
