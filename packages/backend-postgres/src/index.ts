export { createBackendFromUrl, type PostgresUrlOptions } from './from-url.js'
export {
  DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_MAX_VALUE_BYTES,
  DEFAULT_SCHEMA,
  DEFAULT_STATEMENT_TIMEOUT_MS,
  MAX_MAX_VALUE_BYTES,
  type PostgresBackendOptions,
  postgresOptionsSchema,
  type ResolvedPostgresOptions,
} from './options.js'
export { createPostgresBackend, openPostgresBackend } from './postgres-backend.js'
export { MIGRATIONS_TABLE, SCHEMA_VERSION } from './schema.js'
export {
  buildStatements,
  type ConditionShape,
  type PutShape,
  type Statements,
} from './statements.js'
