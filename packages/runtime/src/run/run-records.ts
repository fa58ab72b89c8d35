import { z } from 'zod'
import { jsonValueSchema } from '../shared/canonical-json.js'

/** The states of an effect (docs/runtime/runs-and-effects.md). */
export const EFFECT_STATES = ['planned', 'submitted', 'confirmed', 'failed', 'unknown'] as const
/** A state of an effect. */
export type EffectState = (typeof EFFECT_STATES)[number]

/** The recovery decisions and lifecycle events a run's audit trail records. */
export const RUN_AUDIT_EVENTS = [
  'run_created',
  'attempt_started',
  'context_checked',
  'revalidation_passed',
  'revalidation_failed',
  'effect_reconciled',
  'effect_redispatched',
  'needs_attention',
  'operator_resolved',
  'run_completed',
] as const

const timestamp = z.iso.datetime()
const token = z.int().positive()

/** The attempt that owns (or last owned) a run. */
export const attemptSchema = z.strictObject({
  /** Stable id: the run id plus the fencing token of the lease that opened it. */
  attemptId: z.string(),
  /** The run lease's fencing token; strictly increasing per run. */
  token,
  holder: z.string(),
  startedAt: timestamp,
})
/** See {@link attemptSchema}. */
export type Attempt = z.infer<typeof attemptSchema>

/** One audit entry of a run. */
export const runAuditEntrySchema = z.strictObject({
  event: z.enum(RUN_AUDIT_EVENTS),
  at: timestamp,
  attemptId: z.string(),
  /** Log-safe details: the rule applied, the reconciler's answer, the fallback, the effect id. */
  detail: z.record(z.string(), jsonValueSchema),
})
/** See {@link runAuditEntrySchema}. */
export type RunAuditEntry = z.infer<typeof runAuditEntrySchema>

/** How many audit entries the head keeps; effects keep their own history besides. */
export const MAX_RUN_AUDIT_ENTRIES = 512

/** A reference to context the next step needs; checked to exist at resume. */
export const contextRefSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('session-key'), sessionId: z.string(), key: z.string() }),
  z.strictObject({ kind: z.literal('artifact'), key: z.string() }),
])
/** See {@link contextRefSchema}. */
export type ContextRef = z.infer<typeof contextRefSchema>

/** The run's head record: identity, status, the current attempt and the audit trail. */
export const runHeadSchema = z.strictObject({
  runId: z.string(),
  status: z.enum(['open', 'completed']),
  attempt: attemptSchema,
  attemptCount: z.int().positive(),
  createdAt: timestamp,
  updatedAt: timestamp,
  audit: z.array(runAuditEntrySchema),
  /**
   * `true` once the run keeps the index of its unknown effects (effect-state-index.ts): set at
   * creation, or by the first open by a runtime that keeps it, after it built the index.
   * Absent on a run written before the index, whose unknown effects have no marker.
   */
  unknownIndex: z.literal(true).optional(),
})
/** See {@link runHeadSchema}. */
export type RunHead = z.infer<typeof runHeadSchema>

/** One transition in an effect's own history. */
export const effectHistoryEntrySchema = z.strictObject({
  state: z.enum(EFFECT_STATES),
  at: timestamp,
  attemptId: z.string(),
  /** Why: `dispatch`, `timeout`, `reconciler:confirmed`, `operator:retry`... */
  reason: z.string(),
})

/** An error stored with a failed effect (message and optional code only: log-safe). */
export const effectErrorSchema = z.strictObject({
  message: z.string(),
  code: z.string().nullable(),
})
/** See {@link effectErrorSchema}. */
export type EffectError = z.infer<typeof effectErrorSchema>

/** One effect: its identity, request, state and outcome. One record per effect. */
export const effectRecordSchema = z.strictObject({
  runId: z.string(),
  effectId: z.string(),
  kind: z.string(),
  idempotencyKey: z.string(),
  /** Checksum of the request, so a re-call with another payload is refused. */
  requestChecksum: z.string(),
  request: jsonValueSchema,
  state: z.enum(EFFECT_STATES),
  /** The result once confirmed, else null. */
  result: jsonValueSchema.nullable(),
  /** The error once failed, else null. */
  error: effectErrorSchema.nullable(),
  /** Token of the attempt that wrote this version. */
  token,
  /** Whether an operator allowed one more dispatch (after `unknown`). */
  retryAllowed: z.boolean(),
  history: z.array(effectHistoryEntrySchema),
  createdAt: timestamp,
  updatedAt: timestamp,
})
/** See {@link effectRecordSchema}. */
export type EffectRecord = z.infer<typeof effectRecordSchema>

/** How many history entries an effect keeps (its transitions are few; retries are bounded by this). */
export const MAX_EFFECT_HISTORY = 64

/** A committed step: its accepted outputs and the position it moved the run to, in one record. */
export const stepRecordSchema = z.strictObject({
  runId: z.string(),
  seq: z.int().positive(),
  /** The step's name (the workflow position it completed). */
  step: z.string(),
  outputs: jsonValueSchema,
  /** The position the run is at after this commit: the next step's name, or null at the end. */
  next: z.string().nullable(),
  /** What the next step needs; verified at resume. */
  contextRefs: z.array(contextRefSchema),
  token,
  attemptId: z.string(),
  committedAt: timestamp,
})
/** See {@link stepRecordSchema}. */
export type StepRecord = z.infer<typeof stepRecordSchema>
