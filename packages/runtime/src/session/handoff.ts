import type { WriterIdentity } from '@agent-state/core'
import { z } from 'zod'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'

/** The envelope schema version this runtime writes and the newest it reads. */
export const HANDOFF_VERSION = 1

/** The reserved name of the handoff document (the envelope's `key`). */
export const HANDOFF_KEY = 'handoff.json'

/**
 * The typed handoff payload (docs/runtime/sessions.md): who hands off to whom, what and why,
 * plus optional structured context. Unknown extra fields are kept.
 */
export const handoffArtifactSchema = z.looseObject({
  _type: z.literal('handoff_artifact'),
  source_persona: z.string().min(1),
  target_persona_or_human: z.looseObject({
    kind: z.enum(['human', 'persona']),
    label: z.string().min(1),
  }),
  task: z.string().min(1),
  reason: z.string().min(1),
  evidence: z.array(jsonValueSchema).optional(),
  open_questions: z.array(z.string()).optional(),
  side_effects: z.array(jsonValueSchema).optional(),
})

/** A typed handoff artifact; see {@link handoffArtifactSchema}. */
export type HandoffArtifact = z.infer<typeof handoffArtifactSchema>

const writerSchema = z.strictObject({
  writerId: z.string().min(1).max(256),
  stageId: z.string().min(1).max(256).optional(),
  sessionId: z.string().min(1).max(256).optional(),
  workerId: z.string().min(1).max(256).optional(),
})

/** The stored handoff envelope, version 1. */
export const handoffEnvelopeSchema = z.strictObject({
  _type: z.literal('agent_state_handoff'),
  version: z.literal(HANDOFF_VERSION),
  session_id: z.string().min(1),
  key: z.literal(HANDOFF_KEY),
  written_at: z.iso.datetime(),
  writer: writerSchema,
  handoff: handoffArtifactSchema.optional(),
  summary: jsonValueSchema,
})

/** A validated handoff envelope as `readHandoff` returns it. */
export interface HandoffEnvelope {
  readonly _type: 'agent_state_handoff'
  readonly version: typeof HANDOFF_VERSION
  readonly session_id: string
  readonly key: typeof HANDOFF_KEY
  /** RFC 3339 time of the `handoff` call. */
  readonly written_at: string
  readonly writer: WriterIdentity
  /** The typed artifact, when the summary is one or holds one under `handoff`. */
  readonly handoff?: HandoffArtifact
  /** The summary exactly as given. */
  readonly summary: JsonValue
}

/** The typed artifact in `summary` (the summary itself, or its `handoff` field), if any. */
function artifactIn(summary: JsonValue): HandoffArtifact | undefined {
  const direct = handoffArtifactSchema.safeParse(summary)
  if (direct.success) return direct.data
  if (summary !== null && typeof summary === 'object' && !Array.isArray(summary)) {
    const nested = handoffArtifactSchema.safeParse((summary as Record<string, unknown>).handoff)
    if (nested.success) return nested.data
  }
  return undefined
}

/** Builds and validates the envelope for `summary`; throws `INVALID_HANDOFF` for non-JSON. */
export function buildHandoffEnvelope(
  sessionId: string,
  writer: WriterIdentity,
  summary: unknown,
  now: number,
): HandoffEnvelope {
  const parsed = jsonValueSchema.safeParse(summary)
  if (!parsed.success) {
    throw runtimeError('INVALID_HANDOFF', 'A handoff summary must be a plain JSON value', {
      path: parsed.error.issues[0]?.path.join('.') ?? '',
    })
  }
  const artifact = artifactIn(parsed.data)
  const envelope: HandoffEnvelope = {
    _type: 'agent_state_handoff',
    version: HANDOFF_VERSION,
    session_id: sessionId,
    key: HANDOFF_KEY,
    written_at: new Date(now).toISOString(),
    writer,
    ...(artifact === undefined ? {} : { handoff: artifact }),
    summary: parsed.data,
  }
  return envelope
}

/**
 * Parses and validates stored envelope bytes. Anything unreadable is
 * `HANDOFF_CORRUPT` (never "no handoff"); a newer version is `HANDOFF_INCOMPATIBLE`.
 */
export function decodeHandoffEnvelope(bytes: Uint8Array, sessionId: string): HandoffEnvelope {
  let raw: unknown
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch (cause) {
    throw runtimeError(
      'HANDOFF_CORRUPT',
      `The handoff of session ${sessionId} is not valid JSON`,
      { sessionId },
      cause,
    )
  }
  const version = (raw as { version?: unknown } | null)?.version
  if (
    (raw as { _type?: unknown } | null)?._type === 'agent_state_handoff' &&
    typeof version === 'number' &&
    version > HANDOFF_VERSION
  ) {
    throw runtimeError(
      'HANDOFF_INCOMPATIBLE',
      `The handoff of session ${sessionId} has version ${version}; this runtime reads up to ${HANDOFF_VERSION}`,
      { sessionId, version, supported: HANDOFF_VERSION },
    )
  }
  const parsed = handoffEnvelopeSchema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw runtimeError(
      'HANDOFF_CORRUPT',
      `The handoff of session ${sessionId} fails its schema at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
      { sessionId, path: issue?.path.join('.') ?? '' },
    )
  }
  if (parsed.data.session_id !== sessionId) {
    throw runtimeError(
      'HANDOFF_CORRUPT',
      `The handoff stored for session ${sessionId} names another session`,
      {
        sessionId,
        storedSessionId: parsed.data.session_id,
      },
    )
  }
  return parsed.data as HandoffEnvelope
}
