import { type Clock, namespaceSchema } from '@agent-state/core'
import { z } from 'zod'
import type { MemoryStore } from './memory-store.js'

/** Options of `createMemoryBackend`, as a zod schema; see {@link MemoryBackendOptions}. */
export const memoryOptionsSchema = z.object({
  store: z.custom<MemoryStore>((value) => typeof value === 'object' && value !== null).optional(),
  namespace: namespaceSchema.optional(),
  clock: z.custom<Clock>((value) => typeof value === 'function').optional(),
  maxValueBytes: z.number().int().positive().optional(),
})

/** Options of `createMemoryBackend`. */
export interface MemoryBackendOptions {
  /**
   * The storage to use. Instances given the same store share keys (as
   * separate processes would share a disk). Default: one store per process.
   */
  readonly store?: MemoryStore
  /** Isolates keys from other namespaces in the same store. Default `"default"`. */
  readonly namespace?: string
  /** Clock for `updatedAt` and lease expiry. Default `Date.now`. */
  readonly clock?: Clock
  /** Largest value accepted. Default 64 MiB. */
  readonly maxValueBytes?: number
}
