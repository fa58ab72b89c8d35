import { type Clock, DEFAULT_MAX_VALUE_BYTES, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'
import type { MemoryStore } from './memory-store.js'

/**
 * Options of `createMemoryBackend`, as a zod schema: the only source of the
 * option types. Strict: an unknown option (a typo) is `INVALID_ARGUMENT`.
 */
export const memoryOptionsSchema = z.strictObject({
  /**
   * The storage to use. Instances given the same store share keys (as
   * separate processes would share a disk). Default: one store per process.
   */
  store: z
    .custom<MemoryStore>(
      (value) => typeof value === 'object' && value !== null,
      'store must be a MemoryStore (from createMemoryStore)',
    )
    .optional(),
  /**
   * Isolates keys from other namespaces in the same store. 1-128 of
   * `[A-Za-z0-9._-]`, not starting with a dot. Default `"default"`.
   */
  namespace: namespaceSchema.default('default'),
  /** Clock for `updatedAt` and lease expiry (the `host` lease clock). Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .optional(),
  /** Largest value accepted, in bytes (`VALUE_TOO_LARGE` beyond). Default 64 MiB. */
  maxValueBytes: z.number().int().positive().default(DEFAULT_MAX_VALUE_BYTES),
})

/** Options of `createMemoryBackend`; see {@link memoryOptionsSchema} for each field. */
export type MemoryBackendOptions = z.input<typeof memoryOptionsSchema>

/** Options after validation and defaults. */
export type ResolvedMemoryOptions = z.output<typeof memoryOptionsSchema>
