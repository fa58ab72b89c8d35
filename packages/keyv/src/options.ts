import { backendSchema, keyPrefixSchema, writerIdentitySchema } from '@agent-state/core'
import { z } from 'zod'

/** Options of `createKeyvStore`, as a zod schema: the single source of {@link KeyvStoreOptions}. */
export const keyvStoreOptionsSchema = z.strictObject({
  /**
   * The storage. The store does not own it: Keyv's `disconnect()` leaves it
   * open (close it yourself), so one backend can serve several stores.
   */
  backend: backendSchema,
  /** Backend key prefix under which every Keyv namespace lives. Default `"keyv"`. */
  prefix: keyPrefixSchema.default('keyv'),
  /** Writer identity stored with every value as conflict metadata. Default: none. */
  writer: writerIdentitySchema.optional(),
  /** How many deletes `clear()` and `deleteMany()` run at once (1-256). Default 32. */
  clearConcurrency: z.number().int().min(1).max(256).default(32),
})

/** Options of `createKeyvStore`; see {@link keyvStoreOptionsSchema} for each field. */
export type KeyvStoreOptions = z.input<typeof keyvStoreOptionsSchema>

/** The options with defaults applied. */
export type ResolvedKeyvStoreOptions = z.output<typeof keyvStoreOptionsSchema>
