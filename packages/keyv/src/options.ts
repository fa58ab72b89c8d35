import { type Backend, isValidKey, type WriterIdentity } from '@agent-state/core'
import { z } from 'zod'

/** Options of `createKeyvStore`, as a zod schema; see {@link KeyvStoreOptions}. */
export const keyvStoreOptionsSchema = z.object({
  backend: z.custom<Backend>(
    (value) =>
      typeof value === 'object' &&
      value !== null &&
      (value as { contractVersion?: unknown }).contractVersion === 1,
    'backend must be an agent-state Backend (contract version 1)',
  ),
  prefix: z
    .string()
    .refine((value) => isValidKey(value), 'prefix must be a valid backend key (no trailing /)')
    .optional(),
  writer: z
    .object({
      writerId: z.string().min(1).max(256),
      stageId: z.string().optional(),
      sessionId: z.string().optional(),
      workerId: z.string().optional(),
    })
    .optional(),
  clearConcurrency: z.number().int().min(1).max(256).optional(),
})

/** Options of `createKeyvStore`. */
export interface KeyvStoreOptions {
  /**
   * The storage. The store does not own it: Keyv's `disconnect()` leaves it
   * open (close it yourself), so one backend can serve several stores.
   */
  readonly backend: Backend
  /** Backend key prefix under which every Keyv namespace lives. Default `"keyv"`. */
  readonly prefix?: string
  /** Writer identity stored with every value as conflict metadata. Default: none. */
  readonly writer?: WriterIdentity
  /** How many deletes `clear()` and `deleteMany()` run at once. Default 32. */
  readonly clearConcurrency?: number
}

/** The options with defaults applied. */
export interface ResolvedKeyvStoreOptions {
  readonly backend: Backend
  readonly prefix: string
  readonly writer: WriterIdentity | undefined
  readonly clearConcurrency: number
}
