import { DEFAULT_MAX_VALUE_BYTES, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

/** Core's default largest value, 64 MiB (a `bytea` holds up to 1 GB; large values cost memory on both ends). */
export { DEFAULT_MAX_VALUE_BYTES }
/** Upper bound of `maxValueBytes`: well below PostgreSQL's 1 GB field limit. */
export const MAX_MAX_VALUE_BYTES = 512 * 1024 * 1024
/** Default PostgreSQL schema holding the backend's tables. */
export const DEFAULT_SCHEMA = 'agent_state'
/** Default `statement_timeout`: how long one statement may run on the server. */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 5000
/** Default `lock_timeout`: how long a statement waits for a row or table lock. */
export const DEFAULT_LOCK_TIMEOUT_MS = 1000
/** Default `idle_in_transaction_session_timeout` (only migrations open transactions). */
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 5000

/** A PostgreSQL identifier the backend can put in SQL unquoted: lower-case, at most 63 bytes. */
const identifier = z
  .string()
  .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'a schema name is 1-63 of [a-z0-9_], not starting with a digit')

/**
 * TLS options handed to `pg` unchanged (`tls.connect` options: `ca`, `cert`,
 * `key`, `rejectUnauthorized`, `servername`…), or `true` for TLS with the
 * system's CAs. A URL's `sslmode`, `sslrootcert`, `sslcert` and `sslkey`
 * become these.
 */
const sslSchema = z.union([z.boolean(), z.record(z.string(), z.unknown())])

/**
 * Options of `openPostgresBackend`, as a zod schema: the only source of the
 * option types. Strict: an unknown option (a typo) is `INVALID_ARGUMENT`.
 */
export const postgresOptionsSchema = z.strictObject({
  /**
   * libpq-style connection URL, `postgres://user:password@host:5432/database`
   * (percent-encode special characters of the password). Never printed: errors
   * name the host, port, database and user only.
   */
  connectionString: z.string().min(1, 'connectionString must be a non-empty string'),
  /**
   * Isolates this instance's keys from other namespaces in the same schema.
   * 1 to 128 characters of `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
   */
  namespace: namespaceSchema.default('default'),
  /** The PostgreSQL schema of the backend's tables, created if missing. Default `"agent_state"`. */
  schema: identifier.default(DEFAULT_SCHEMA),
  /** TLS: see {@link sslSchema}. Default: none (or what the URL says). */
  ssl: sslSchema.optional(),
  /** Connections of the pool (concurrent statements). Default 10, at most 1000. */
  poolSize: z.number().int().min(1).max(1000).default(10),
  /**
   * Server-side limit of one statement, in ms (`statement_timeout`). A
   * statement over it is cancelled and rolled back (`UNAVAILABLE`). Default 5000.
   */
  statementTimeoutMs: z.number().int().min(1).max(600_000).default(DEFAULT_STATEMENT_TIMEOUT_MS),
  /** How long a statement waits for a lock, in ms (`lock_timeout`). Default 1000. */
  lockTimeoutMs: z.number().int().min(1).max(600_000).default(DEFAULT_LOCK_TIMEOUT_MS),
  /**
   * `idle_in_transaction_session_timeout`, in ms: a migration transaction
   * whose client stops answering is ended after it. Default 5000.
   */
  idleInTransactionTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(600_000)
    .default(DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS),
  /**
   * Send the three timeouts as connection startup parameters (`true`,
   * default). PgBouncer refuses unknown startup parameters: set `false`
   * behind it and give the role the same settings (`ALTER ROLE … SET`, see
   * the README). Migrations set them with `SET LOCAL` either way.
   */
  startupTimeouts: z.boolean().default(true),
  /** How long to wait for a new connection, in ms. Default 5000. */
  connectTimeoutMs: z.number().int().min(1).max(600_000).default(5000),
  /** Largest value accepted, in bytes. Default 64 MiB, at most 512 MiB. */
  maxValueBytes: z
    .number()
    .int()
    .positive()
    .max(MAX_MAX_VALUE_BYTES)
    .default(DEFAULT_MAX_VALUE_BYTES),
  /**
   * Whether this instance offers `watch` (change notification through
   * `LISTEN/NOTIFY`). Writes announce their keys either way, so watchers on
   * other instances see this one's writes. Default `true`.
   */
  changeNotification: z.boolean().default(true),
  /**
   * Where the `LISTEN` connection of `watch` goes: a direct PostgreSQL
   * connection URL, same form as `connectionString`. Needed when
   * `connectionString` goes through a transaction-pooling PgBouncer, which
   * cannot carry `LISTEN` (a session state). Default: `connectionString`.
   */
  listenConnectionString: z
    .string()
    .min(1, 'listenConnectionString must be a non-empty string')
    .optional(),
})

/** Options of `openPostgresBackend` (what a caller passes; see {@link postgresOptionsSchema}). */
export type PostgresBackendOptions = z.input<typeof postgresOptionsSchema>
/** The options after parsing, defaults applied. */
export type ResolvedPostgresOptions = z.output<typeof postgresOptionsSchema>
