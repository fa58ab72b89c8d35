import { z } from 'zod'
import { resumeConditionsSchema } from './resume-conditions.js'

/** Who asked a worker to park (seed 000). */
export const SUSPEND_INITIATORS = ['self', 'parent', 'operator', 'triggered'] as const
/** Who asked a worker to park. */
export type SuspendInitiator = (typeof SUSPEND_INITIATORS)[number]

/**
 * The Suspension envelope (seed 000): what a parked worker returns to its
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
  conditions: resumeConditionsSchema.nullable(),
  /** Completed loop turns. */
  iterationsCompleted: z.int().nonnegative(),
  /** RFC 3339. */
  suspendedAt: z.iso.datetime(),
  /** Loop turn index, when known. */
  suspendedAtTurn: z.int().nonnegative().nullable(),
  /** The key of the persisted snapshot in the backend. */
  snapshotKey: z.string(),
  /** Who owns the resume, for example `"ResumeBy.parent_llm"`. */
  resumeByMechanism: z.string().nullable(),
  /** A registered trigger id that will resume the worker. */
  autoResumeTrigger: z.string().nullable(),
})

/** The Suspension envelope; see {@link suspensionSchema}. */
export type Suspension = z.infer<typeof suspensionSchema>

/** What `worker.suspend` takes. */
export interface SuspendRequest {
  /** Why the worker parks; trimmed, must not be empty. */
  readonly reason: string
  /** Default `self`. */
  readonly initiator?: SuspendInitiator
  /** What may wake it; validated (`INVALID_RESUME_CONDITIONS`). */
  readonly conditions?: unknown
  /** The loop turn index, when known. */
  readonly suspendedAtTurn?: number
  readonly resumeByMechanism?: string
  readonly autoResumeTrigger?: string
}
