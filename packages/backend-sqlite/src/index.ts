export { createBackendFromUrl, type SqliteUrlOptions } from './from-url.js'
export {
  SQLITE_WRITE_STEPS,
  sqliteFrozenWriterLimitation,
  steppedSqliteClock,
} from './frozen-writer.js'
export {
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_MAX_VALUE_BYTES,
  MAX_MAX_VALUE_BYTES,
  MEMORY_PATH,
  type ResolvedSqliteOptions,
  type SqliteBackendOptions,
  sqliteOptionsSchema,
} from './options.js'
export { SCHEMA_VERSION } from './schema.js'
export { createSqliteBackend } from './sqlite-backend.js'
