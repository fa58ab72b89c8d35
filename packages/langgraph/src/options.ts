import { type Backend, isValidKey } from '@agent-state/core'
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint'
import { z } from 'zod'

/** Options of `createCheckpointSaver`, as a zod schema; see {@link CheckpointSaverOptions}. */
export const checkpointSaverOptionsSchema = z.object({
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
  serde: z
    .custom<SerializerProtocol>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        typeof (value as SerializerProtocol).dumpsTyped === 'function' &&
        typeof (value as SerializerProtocol).loadsTyped === 'function',
    )
    .optional(),
  ownership: z
    .object({
      holder: z.string().min(1).max(256),
      ttlMs: z.number().int().min(1000).max(86_400_000),
    })
    .optional(),
  keepLast: z.number().int().min(1).optional(),
  concurrency: z.number().int().min(1).max(256).optional(),
})

/** Thread ownership settings; see the README. */
export interface OwnershipOptions {
  /** Who owns the threads this saver writes (1 to 256 characters), e.g. `host:pid`. */
  readonly holder: string
  /** Lease time-to-live in ms (1 s to 24 h); renewed by writes once half of it has passed. */
  readonly ttlMs: number
}

/** Options of `createCheckpointSaver`. */
export interface CheckpointSaverOptions {
  /** The storage. The saver does not own it: close it yourself. */
  readonly backend: Backend
  /** Backend key prefix of every thread. Default `"langgraph"`. */
  readonly prefix?: string
  /** LangGraph serializer. Default: LangGraph's `JsonPlusSerializer`. */
  readonly serde?: SerializerProtocol
  /**
   * Thread ownership: this saver takes a thread's lease on its first write
   * and every `put`/`putWrites` is fenced by it. Off by default. Every writer
   * of a thread must use it for it to protect the thread.
   */
  readonly ownership?: OwnershipOptions
  /** Retention: after every `put`, prune the namespace to its last N checkpoints (see `prune`). */
  readonly keepLast?: number
  /** How many backend requests one call runs at once. Default 16. */
  readonly concurrency?: number
}
