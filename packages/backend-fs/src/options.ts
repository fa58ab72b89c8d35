import { type Clock, DEFAULT_MAX_VALUE_BYTES, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'

/**
 * Options of `createFsBackend`, as a zod schema: the only source of the option
 * types. Strict: an unknown option (a typo) is `INVALID_ARGUMENT`.
 */
export const fsOptionsSchema = z.strictObject({
  /**
   * Directory holding every namespace, created `0700` when missing. A relative
   * path is resolved against the current working directory when the backend
   * is created.
   */
  root: z.string().min(1, 'root must be a non-empty path'),
  /**
   * Isolates keys from other namespaces under the same root (one directory
   * each). 1-128 of `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
   */
  namespace: namespaceSchema.default('default'),
  /** Clock for `updatedAt` and lease expiry (the `host` lease clock). Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .optional(),
  /**
   * fsync every record file and its directory before a write resolves.
   * Default `true`. With `false` writes are still atomic, but a power loss or
   * kernel crash may lose acknowledged writes, and the backend stops
   * claiming the `durable` capability.
   */
  fsync: z.boolean().default(true),
  /**
   * The longest a write keeps trying for a key's commit slot before failing
   * with `UNAVAILABLE` (nothing written, retryable), in milliseconds. A slot
   * is normally held for a few microseconds and a stuck holder is broken
   * after `lockBreakMs`, so this is only reached when writers keep getting
   * stuck one after another. Default 10 000.
   */
  lockTimeoutMs: z.number().int().min(0).max(3_600_000).default(10_000),
  /**
   * How long a waiting write lets another live process hold a key's commit
   * slot without progress before it breaks the slot, in milliseconds. Safe at
   * any value: a broken holder can never commit afterwards (its temp file is
   * gone; see the README), it only retries. A holder takes a slot only for
   * one version check and one rename, so this bounds how long a frozen
   * writer (SIGSTOP, a paused container) delays the others. Slots of dead
   * processes are broken at once. At or above `lockTimeoutMs`, a stuck
   * holder makes the others fail with `UNAVAILABLE` instead. Default 250.
   */
  lockBreakMs: z.number().int().min(0).max(60_000).default(250),
  /**
   * Longest pause between two tries of a busy commit slot, in milliseconds;
   * pauses start at 1 ms and double. Default 20.
   */
  lockPollMs: z.number().int().min(1).max(1000).default(20),
  /**
   * Temp files whose creator cannot be identified are removed once older than
   * this, in milliseconds. Temp files of dead processes are removed at once.
   * Default 3 600 000 (one hour).
   */
  staleTempMs: z.number().int().min(0).default(3_600_000),
  /**
   * Reuse the records directory's sorted names between listing pages while
   * the directory's timestamps prove it unchanged (a page then costs O(page)
   * instead of a read and sort of the whole directory). Default `true`. Turn
   * it off only on a filesystem whose directory timestamps do not come from
   * this host's clock or are not updated on every change (network
   * filesystems, which this backend does not support anyway).
   */
  listCache: z.boolean().default(true),
  /** Largest value accepted, in bytes. Values are read whole into memory. Default 64 MiB. */
  maxValueBytes: z
    .number()
    .int()
    .positive()
    .max(1024 * 1024 * 1024)
    .default(DEFAULT_MAX_VALUE_BYTES),
})

/** Options of `createFsBackend`; see {@link fsOptionsSchema} for each field. */
export type FsBackendOptions = z.input<typeof fsOptionsSchema>

/** Options after validation and defaults. */
export type ResolvedFsOptions = z.output<typeof fsOptionsSchema>
