import { type Clock, DEFAULT_MAX_VALUE_BYTES, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

/** The path that selects a private in-memory database (tests only; see the README). */
export const MEMORY_PATH = ':memory:'

/** Default largest value: core's 64 MiB. Larger values block the event loop for longer while they are copied. */
export { DEFAULT_MAX_VALUE_BYTES }
/** Upper bound of `maxValueBytes`: stays well below SQLite's 1 GB `SQLITE_MAX_LENGTH`. */
export const MAX_MAX_VALUE_BYTES = 512 * 1024 * 1024
/** Default total time an operation waits for another connection's write lock. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000

/**
 * Options of `createSqliteBackend`, as a zod schema: the only source of the
 * option types. Strict: an unknown option (a typo) is `INVALID_ARGUMENT`.
 */
export const sqliteOptionsSchema = z.strictObject({
  /**
   * The database file. Relative paths resolve against the current working
   * directory. A missing file is created with mode `0600` (SQLite gives its
   * `-wal` and `-shm` files the same mode); the directory must exist. An
   * existing file must be an agent-state database: an empty file or another
   * application's database is refused (`INCOMPATIBLE_SCHEMA`), untouched.
   * `":memory:"` selects an in-process database that every `:memory:`
   * instance of the process shares: not durable, one process only, for tests.
   */
  path: z.string().min(1, 'path must be a non-empty string'),
  /**
   * Isolates this instance's keys from other namespaces in the same file.
   * 1 to 128 characters of `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
   */
  namespace: namespaceSchema.default('default'),
  /** Clock for `updatedAt` and lease expiry (the `host` lease clock). Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .optional(),
  /**
   * `PRAGMA synchronous`. `FULL` (default) fsyncs the WAL on every commit, so
   * an acknowledged write survives a power loss. `NORMAL` skips that fsync
   * (about 10x faster writes): still atomic and consistent, still safe
   * against a process crash, but the last commits before a power loss or OS
   * crash may be rolled back.
   */
  synchronous: z.enum(['FULL', 'NORMAL']).default('FULL'),
  /**
   * How long an operation waits, in total, for another connection's write
   * lock before failing with `UNAVAILABLE` (nothing written). SQLite's own
   * busy handler waits at most 25 ms at a time (blocking the event loop);
   * between those slices the backend yields to the event loop. Default 5000,
   * at most 600 000.
   */
  busyTimeoutMs: z.number().int().min(0).max(600_000).default(DEFAULT_BUSY_TIMEOUT_MS),
  /** Largest value accepted, in bytes. Default 64 MiB, at most 512 MiB. */
  maxValueBytes: z
    .number()
    .int()
    .positive()
    .max(MAX_MAX_VALUE_BYTES)
    .default(DEFAULT_MAX_VALUE_BYTES),
})

/** Options of `createSqliteBackend` (what a caller passes; see {@link sqliteOptionsSchema}). */
export type SqliteBackendOptions = z.input<typeof sqliteOptionsSchema>
/** The options after parsing, defaults applied. */
export type ResolvedSqliteOptions = z.output<typeof sqliteOptionsSchema>
