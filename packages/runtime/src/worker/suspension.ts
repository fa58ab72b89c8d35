import { z } from 'zod'
import type { ResumeConditions } from './resume-conditions.js'

/** Who asked a worker to park (docs/runtime/workers.md). */
export const SUSPEND_INITIATORS = ['self', 'parent', 'operator', 'triggered'] as const
/** Who asked a worker to park. */
export type SuspendInitiator = (typeof SUSPEND_INITIATORS)[number]

/**
 * What the Suspension says about its resume conditions: presence flags and
 * ids only. Trigger configuration can hold secrets (tokens, webhook URLs), so
 * the payloads stay in the worker snapshot (`SnapshotBody.conditions`).
 */
export const conditionFlagsSchema = z.strictObject({
  hasTrigger: z.boolean(),
  hasTimeout: z.boolean(),
  hasOnEvent: z.boolean(),
  /** The trigger's own id (`conditions.trigger.id`), when it names one. */
  triggerId: z.string().nullable(),
})

/** See {@link conditionFlagsSchema}. */
export type ConditionFlags = z.infer<typeof conditionFlagsSchema>

/** The presence flags and ids of `conditions`, or `null` when the worker is parked open. */
export function conditionFlags(conditions: ResumeConditions | null): ConditionFlags | null {
  if (conditions === null) return null
  return {
    hasTrigger: conditions.trigger !== undefined,
    hasTimeout: conditions.timeout !== undefined,
    hasOnEvent: conditions.onEvent !== undefined,
    triggerId: conditions.trigger?.id ?? null,
  }
}

/**
 * The Suspension envelope (docs/runtime/workers.md): what a parked worker returns to its
 * caller. It is strict on purpose: it carries the suspend metadata and never
 * transcript text, resume input or condition payloads, which stay in the
 * worker snapshot.
 */
export const suspensionSchema = z.strictObject({
  status: z.literal('suspended'),
  /** The resumable reference: pass `handle.workerId` to `resumeWorker`. */
  handle: z.strictObject({ workerId: z.string(), snapshotKey: z.string() }),
  reason: z.string().min(1),
  initiator: z.enum(SUSPEND_INITIATORS),
  /** Which conditions may wake the worker (flags and ids), or `null`: parked open. */
  conditions: conditionFlagsSchema.nullable(),
  /** Completed loop turns. */
  iterationsCompleted: z.int().nonnegative(),
  /** RFC 3339. */
  suspendedAt: z.iso.datetime(),
  /** Loop turn index, when known. */
  suspendedAtTurn: z.int().nonnegative().nullable(),
  /** The key of the persisted snapshot in the backend. */
  snapshotKey: z.string(),
  /** Who owns the resume, as the `resumeBy` dispatch decided: for example `"ResumeBy.parent_llm"`. */
  resumeByMechanism: z.string().nullable(),
  /** The trigger id the resume owner registered, when it registered one. */
  autoResumeTrigger: z.string().nullable(),
})

/** The Suspension envelope; see {@link suspensionSchema}. */
export type Suspension = z.infer<typeof suspensionSchema>
