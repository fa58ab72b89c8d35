import { createHash } from 'node:crypto'
import type { z } from 'zod'
import { z as zod } from 'zod'
import { canonicalJson, checksumOf } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'

/** The format name every ledger record carries. */
export const RUN_RECORD_FORMAT = 'agent-state/run-record'
/**
 * The ledger schema version this runtime writes. 2: the run keeps a per-state index of its
 * unsettled effects (effect-state-index.ts), which a runtime reading only version 1 would
 * not maintain; it refuses these records (`RUN_RECORD_INCOMPATIBLE`) instead.
 */
export const RUN_RECORD_SCHEMA_VERSION = 2
/**
 * The oldest version this runtime reads: version-1 bodies are the same; a run written by
 * version 1 has no state index, which its listing shows (every effect ambiguous) and its
 * next owner builds.
 */
export const RUN_RECORD_OLDEST_READ_VERSION = 1

/** The kinds of ledger record. */
export const RUN_RECORD_KINDS = ['run', 'effect', 'step'] as const
/** A kind of ledger record. */
export type RunRecordKind = (typeof RUN_RECORD_KINDS)[number]

const envelopeSchema = zod.strictObject({
  format: zod.literal(RUN_RECORD_FORMAT),
  schemaVersion: zod.int().positive(),
  kind: zod.enum(RUN_RECORD_KINDS),
  checksum: zod.string().regex(/^sha256:[0-9a-f]{64}$/),
  body: zod.unknown(),
})

const encoder = new TextEncoder()

/**
 * Serializes a ledger record: its kind, schema version and the checksum of
 * the body's canonical JSON travel with it, so a reader can refuse a damaged
 * or too-new record instead of guessing. The body is built by the runtime
 * from typed, already-validated parts, so it is not re-parsed here (the
 * reader verifies everything); the envelope is assembled around the one
 * canonical serialization of the body, keys in canonical order.
 */
export function encodeRunRecord<T>(
  kind: RunRecordKind,
  _schema: z.ZodType<T>,
  body: T,
): Uint8Array {
  const bodyJson = canonicalJson(body)
  const checksum = `sha256:${createHash('sha256').update(bodyJson, 'utf8').digest('hex')}`
  return encoder.encode(
    `{"body":${bodyJson},"checksum":"${checksum}","format":"${RUN_RECORD_FORMAT}","kind":"${kind}","schemaVersion":${RUN_RECORD_SCHEMA_VERSION}}`,
  )
}

/**
 * Parses and verifies a stored ledger record: JSON, envelope, schema version,
 * kind, checksum, body schema. Never returns a partial body and never
 * rewrites the stored bytes.
 *
 * @throws `RUN_RECORD_CORRUPT` or `RUN_RECORD_INCOMPATIBLE`, with `context.key`.
 */
export function decodeRunRecord<T>(
  bytes: Uint8Array,
  kind: RunRecordKind,
  schema: z.ZodType<T>,
  key: string,
): T {
  const context = { key, kind }
  let raw: unknown
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch (cause) {
    throw runtimeError(
      'RUN_RECORD_CORRUPT',
      `The ${kind} record ${key} is not valid JSON`,
      context,
      cause,
    )
  }
  // The version is read before the envelope is checked whole, so a newer
  // runtime's record with extra envelope fields is "too new", not "corrupt".
  const version = (raw as { schemaVersion?: unknown } | null)?.schemaVersion
  if (
    raw !== null &&
    typeof raw === 'object' &&
    (raw as { format?: unknown }).format === RUN_RECORD_FORMAT &&
    typeof version === 'number' &&
    Number.isInteger(version) &&
    version > RUN_RECORD_SCHEMA_VERSION
  ) {
    throw runtimeError(
      'RUN_RECORD_INCOMPATIBLE',
      `The ${kind} record ${key} has schema version ${version}; this runtime reads versions ${RUN_RECORD_OLDEST_READ_VERSION} to ${RUN_RECORD_SCHEMA_VERSION}`,
      { ...context, schemaVersion: version, supported: RUN_RECORD_SCHEMA_VERSION },
    )
  }
  const envelope = envelopeSchema.safeParse(raw)
  if (!envelope.success) {
    throw runtimeError('RUN_RECORD_CORRUPT', `The ${kind} record ${key} has no valid envelope`, {
      ...context,
      path: envelope.error.issues[0]?.path.join('.') ?? '',
    })
  }
  const { schemaVersion, checksum, body } = envelope.data
  if (schemaVersion < RUN_RECORD_OLDEST_READ_VERSION || schemaVersion > RUN_RECORD_SCHEMA_VERSION) {
    throw runtimeError(
      'RUN_RECORD_INCOMPATIBLE',
      `The ${kind} record ${key} has schema version ${schemaVersion}; this runtime reads versions ${RUN_RECORD_OLDEST_READ_VERSION} to ${RUN_RECORD_SCHEMA_VERSION}`,
      { ...context, schemaVersion, supported: RUN_RECORD_SCHEMA_VERSION },
    )
  }
  if (envelope.data.kind !== kind) {
    throw runtimeError(
      'RUN_RECORD_CONTRADICTORY',
      `The record ${key} is a ${envelope.data.kind} record where a ${kind} record belongs`,
      { ...context, storedKind: envelope.data.kind },
    )
  }
  const actual = checksumOf(body)
  if (actual !== checksum) {
    throw runtimeError('RUN_RECORD_CORRUPT', `The ${kind} record ${key} fails its checksum`, {
      ...context,
      expected: checksum,
      actual,
    })
  }
  const parsed = schema.safeParse(body)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw runtimeError(
      'RUN_RECORD_CORRUPT',
      `The ${kind} record ${key} fails its schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
      { ...context, path: issue?.path.join('.') ?? '' },
    )
  }
  return parsed.data
}
