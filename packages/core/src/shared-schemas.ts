import { z } from 'zod'
import { normalizeWriter } from './arguments.js'
import type { Backend, WriterIdentity } from './backend.js'
import { isValidKey } from './keys.js'

/**
 * zod schemas for options that packages built on a Backend (the runtime, the
 * Keyv and LangGraph adapters) all take, so each is validated, worded and
 * typed the same way everywhere.
 */

/** An agent-state `Backend` of contract version 1 (checked by shape: any implementation passes). */
export const backendSchema = z.custom<Backend>(
  (value) =>
    typeof value === 'object' &&
    value !== null &&
    (value as { contractVersion?: unknown }).contractVersion === 1,
  'backend must be an agent-state Backend (contract version 1)',
)

/** A key prefix under which a package keeps its records: a valid backend key, no trailing `/`. */
export const keyPrefixSchema = z
  .string()
  .refine((value) => isValidKey(value), 'prefix must be a valid backend key (no trailing /)')

/**
 * A {@link WriterIdentity}: `writerId` plus optional stage, session and worker
 * ids, 1-256 characters each: exactly the rule every backend applies to a
 * write's `writer` (the same function decides).
 */
export const writerIdentitySchema = z.custom<WriterIdentity>((value) => {
  try {
    normalizeWriter(value)
    return true
  } catch {
    return false
  }
}, 'writer must be { writerId, stageId?, sessionId?, workerId? } with ids of 1-256 characters')
