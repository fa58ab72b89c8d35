import { backendSchema, keyPrefixSchema } from '@agent-state/core'
import type { SerializerProtocol } from '@langchain/langgraph-checkpoint'
import { z } from 'zod'

/** Thread ownership settings, as a zod schema; see the README. */
export const ownershipOptionsSchema = z.strictObject({
  /** Who owns the threads this saver writes (1 to 256 characters), e.g. `host:pid`. */
  holder: z.string().min(1).max(256),
  /** Lease time-to-live in ms (1 s to 24 h); renewed by writes once half of it has passed. */
  ttlMs: z.number().int().min(1000).max(86_400_000),
})

/** Options of `createCheckpointSaver`, as a zod schema: the single source of {@link CheckpointSaverOptions}. */
export const checkpointSaverOptionsSchema = z.strictObject({
  /** The storage. The saver does not own it: close it yourself. */
  backend: backendSchema,
  /** Backend key prefix of every thread. Default `"langgraph"`. */
  prefix: keyPrefixSchema.default('langgraph'),
  /** LangGraph serializer. Default: LangGraph's `JsonPlusSerializer`. */
  serde: z
    .custom<SerializerProtocol>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        typeof (value as SerializerProtocol).dumpsTyped === 'function' &&
        typeof (value as SerializerProtocol).loadsTyped === 'function',
      'serde must be a LangGraph SerializerProtocol (dumpsTyped and loadsTyped)',
    )
    .optional(),
  /**
   * Thread ownership: this saver takes a thread's lease on its first write
   * and every `put`/`putWrites` is fenced by it. Off by default. Every writer
   * of a thread must use it for it to protect the thread.
   */
  ownership: ownershipOptionsSchema.optional(),
  /** Retention: after every `put`, prune the namespace to its last N checkpoints (see `prune`). */
  keepLast: z.number().int().min(1).optional(),
  /** How many backend requests one call runs at once (1-256). Default 16. */
  concurrency: z.number().int().min(1).max(256).default(16),
})

/** Thread ownership settings; see {@link ownershipOptionsSchema} for each field. */
export type OwnershipOptions = z.input<typeof ownershipOptionsSchema>

/** Options of `createCheckpointSaver`; see {@link checkpointSaverOptionsSchema} for each field. */
export type CheckpointSaverOptions = z.input<typeof checkpointSaverOptionsSchema>

/** The options with defaults applied. */
export type ResolvedCheckpointSaverOptions = z.output<typeof checkpointSaverOptionsSchema>
