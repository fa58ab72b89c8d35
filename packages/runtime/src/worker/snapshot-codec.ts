import { z } from 'zod'
import { canonicalJson, checksumOf, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { workerSnapshotKey } from '../shared/layout.js'
import { auditEntrySchema } from './audit.js'
import { resumeConditionsSchema } from './resume-conditions.js'
import { conditionFlags, suspensionSchema } from './suspension.js'

/** The format name every worker snapshot carries. */
export const SNAPSHOT_FORMAT = 'agent-state/worker-snapshot'
/**
 * The newest snapshot schema version this runtime writes: 3 for a worker that
 * owns a run (the body's `run`), 2 for every other snapshot, so those stay
 * readable by the runtimes before worker-owned runs, and a snapshot an older
 * runtime cannot read is refused by it as `SNAPSHOT_INCOMPATIBLE`, not
 * mistaken for `SNAPSHOT_CORRUPT`. It also reads version 1 (which kept
 * condition payloads in the Suspension) and migrates it on load.
 */
export const SNAPSHOT_SCHEMA_VERSION = 3

/** The version a body is written at: the oldest that can hold it (see SNAPSHOT_SCHEMA_VERSION). */
function schemaVersionOf(body: SnapshotBody): number {
  return body.run === undefined ? 2 : 3
}

/** The lifecycle states (docs/runtime/workers.md). */
export const WORKER_STATUSES = ['running', 'suspended', 'done', 'closed'] as const
/** A lifecycle state. */
export type WorkerStatus = (typeof WORKER_STATUSES)[number]

/** The one-shot reminder injected on the first turn after a `continueTranscript: true` resume. */
export const resumeReminderSchema = z.strictObject({
  kind: z.literal('system_reminder'),
  dedupeKey: z.literal('resume_continuity'),
  text: z.string(),
})
/** See {@link resumeReminderSchema}. */
export type ResumeReminder = z.infer<typeof resumeReminderSchema>

/** Schema of the snapshot body: everything needed to continue the worker elsewhere. */
export const snapshotBodySchema = z.strictObject({
  workerId: z.string(),
  status: z.enum(WORKER_STATUSES),
  iterationsCompleted: z.int().nonnegative(),
  /** Application state of the loop. */
  state: jsonValueSchema,
  /** Application transcript events (the snapshot, not the Suspension, holds them). */
  transcript: z.array(jsonValueSchema),
  /** Summary of the prior transcript, used by `continueTranscript: false`. */
  summary: z.string().nullable(),
  /** The final result once done. */
  result: jsonValueSchema,
  suspension: suspensionSchema.nullable(),
  /** The suspension's resume conditions with their payloads (never in the Suspension envelope). */
  conditions: resumeConditionsSchema.nullable(),
  /**
   * Transcripts set aside by `continueTranscript: false` resumes, oldest
   * first: the worker continues without them, but they are never destroyed.
   */
  transcriptArchive: z.array(
    z.strictObject({ archivedAt: z.iso.datetime(), events: z.array(jsonValueSchema) }),
  ),
  /** The latest resume, while running after one. */
  resume: z
    .strictObject({
      input: jsonValueSchema,
      continueTranscript: z.boolean(),
      resumedAt: z.iso.datetime(),
      cause: z.string().nullable(),
      reminder: resumeReminderSchema.nullable(),
    })
    .nullable(),
  /**
   * The run this worker owns (`worker.openRun`), reopened with it on resume
   * (docs/runtime/workers.md, Worker and run). Absent when it owns none, so
   * such snapshots are unchanged.
   */
  run: z.strictObject({ runId: z.string() }).optional(),
  /** The lease that owns the worker while it runs. */
  owner: z.strictObject({ holder: z.string(), token: z.int().positive() }).nullable(),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  audit: z.array(auditEntrySchema),
})

/** A verified snapshot body; see {@link snapshotBodySchema}. */
export type SnapshotBody = z.infer<typeof snapshotBodySchema>

const envelopeSchema = z.strictObject({
  format: z.literal(SNAPSHOT_FORMAT),
  schemaVersion: z.int().positive(),
  checksum: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  body: z.unknown(),
})

const encoder = new TextEncoder()

/** Serializes a body into the stored envelope with its schema version and checksum. */
export function encodeSnapshot(body: SnapshotBody): Uint8Array {
  const checked = snapshotBodySchema.parse(body)
  return encoder.encode(
    canonicalJson({
      format: SNAPSHOT_FORMAT,
      schemaVersion: schemaVersionOf(checked),
      checksum: checksumOf(checked),
      body: checked,
    }),
  )
}

/**
 * Parses and verifies a stored snapshot: JSON, envelope, schema version,
 * checksum (sha256 of the body's canonical JSON), body schema, worker id.
 *
 * @throws `SNAPSHOT_CORRUPT` or `SNAPSHOT_INCOMPATIBLE` (with `context.key`: where the
 *   snapshot is; retire it with `quarantineWorkerSnapshot`); never returns a partial body.
 */
export function decodeSnapshot(bytes: Uint8Array, workerId: string): SnapshotBody {
  // Every failure names where the damaged snapshot is, so an operator can quarantine it.
  const context = { workerId, key: workerSnapshotKey(workerId) }
  let raw: unknown
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch (cause) {
    throw runtimeError(
      'SNAPSHOT_CORRUPT',
      `The snapshot of worker ${workerId} is not valid JSON`,
      context,
      cause,
    )
  }
  const envelope = envelopeSchema.safeParse(raw)
  if (!envelope.success) {
    throw runtimeError(
      'SNAPSHOT_CORRUPT',
      `The snapshot of worker ${workerId} has no valid envelope`,
      {
        ...context,
        path: envelope.error.issues[0]?.path.join('.') ?? '',
      },
    )
  }
  const { schemaVersion, checksum } = envelope.data
  let { body } = envelope.data
  if (schemaVersion > SNAPSHOT_SCHEMA_VERSION) {
    throw runtimeError(
      'SNAPSHOT_INCOMPATIBLE',
      `The snapshot of worker ${workerId} has schema version ${schemaVersion}; this runtime reads 1 to ${SNAPSHOT_SCHEMA_VERSION}`,
      { ...context, schemaVersion, supported: SNAPSHOT_SCHEMA_VERSION },
    )
  }
  const actual = checksumOf(body)
  if (actual !== checksum) {
    throw runtimeError(
      'SNAPSHOT_CORRUPT',
      `The snapshot of worker ${workerId} fails its checksum`,
      {
        ...context,
        expected: checksum,
        actual,
      },
    )
  }
  if (schemaVersion === 1) body = migrateV1(body)
  const parsed = snapshotBodySchema.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw runtimeError(
      'SNAPSHOT_CORRUPT',
      `The snapshot of worker ${workerId} fails its schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
      { ...context, path: issue?.path.join('.') ?? '' },
    )
  }
  if (parsed.data.workerId !== workerId) {
    throw runtimeError(
      'SNAPSHOT_CORRUPT',
      `The snapshot stored for worker ${workerId} names another worker`,
      {
        ...context,
        storedWorkerId: parsed.data.workerId,
      },
    )
  }
  return parsed.data
}

/**
 * Version 1 kept the conditions' payloads inside the Suspension and had no
 * transcript archive: move the payloads into the body, leave flags behind.
 * Anything unexpected is left as is, for the schema check to reject.
 */
function migrateV1(body: unknown): unknown {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return body
  const old = body as Record<string, unknown>
  const suspension = old.suspension as Record<string, unknown> | null | undefined
  const conditions = resumeConditionsSchema.nullable().safeParse(suspension?.conditions ?? null)
  if (!conditions.success) return body
  return {
    ...old,
    suspension:
      suspension === null || suspension === undefined
        ? suspension
        : { ...suspension, conditions: conditionFlags(conditions.data) },
    conditions: conditions.data,
    transcriptArchive: [],
  }
}
