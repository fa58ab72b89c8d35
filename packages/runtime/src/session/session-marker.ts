import {
  AgentStateError,
  type Backend,
  isAgentStateError,
  quoteForMessage,
  type WriterIdentity,
} from '@agent-state/core'
import { z } from 'zod'
import { runtimeError } from '../shared/errors.js'
import { assertSessionId } from '../shared/ids.js'
import { sessionMarkerKey } from '../shared/layout.js'
import type { ConflictPolicy } from './conflict-policy.js'

/** The policies from weakest to strongest. */
const STRENGTH: Readonly<Record<ConflictPolicy, number>> = { ignore: 0, warn: 1, error: 2 }

/** Whether `chosen` guards less than `stored` (a weakening that must be explicit and recorded). */
export function weakerThan(chosen: ConflictPolicy, stored: ConflictPolicy): boolean {
  return STRENGTH[chosen] < STRENGTH[stored]
}

/** A handle that chose a weaker policy than its session's, as recorded in the marker. */
export interface PolicyOverride {
  readonly writerId: string
  readonly policy: ConflictPolicy
  /** RFC 3339. */
  readonly at: string
}

/** How many overrides the marker keeps (newest last). */
const MAX_OVERRIDES = 64

const policySchema = z.enum(['ignore', 'warn', 'error'])

const markerSchema = z.looseObject({
  _type: z.literal('agent_state_session'),
  version: z.literal(1),
  session_id: z.string(),
  /** Absent in markers written before the policy was stored: those sessions are `ignore`. */
  conflict_policy: policySchema.optional(),
  policy_overrides: z
    .array(z.strictObject({ writer_id: z.string(), policy: policySchema, at: z.string() }))
    .optional(),
})

type Marker = z.infer<typeof markerSchema>

/** The stored session marker, verified. */
export interface SessionMarker {
  /** The session's own policy, applied to handles that choose none. */
  readonly conflictPolicy: ConflictPolicy
  readonly overrides: readonly PolicyOverride[]
  readonly version: string
  readonly raw: Marker
}

const encode = (marker: unknown) => new TextEncoder().encode(JSON.stringify(marker))

/**
 * Writes a new session's marker create-only, with the session's policy.
 * Resolves `false` when the session already exists.
 */
export async function createMarker(
  backend: Backend,
  sessionId: string,
  policy: ConflictPolicy,
  writer: WriterIdentity,
  now: number,
): Promise<boolean> {
  const marker = {
    _type: 'agent_state_session',
    version: 1,
    session_id: sessionId,
    created_at: new Date(now).toISOString(),
    conflict_policy: policy,
  }
  try {
    await backend.put(sessionMarkerKey(sessionId), encode(marker), { ifNoneMatch: '*', writer })
    return true
  } catch (error) {
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) return false
    throw error
  }
}

/** Reads and verifies the marker. @throws `SESSION_NOT_FOUND`, `CORRUPT`. */
export async function readMarker(backend: Backend, sessionId: string): Promise<SessionMarker> {
  const key = sessionMarkerKey(sessionId)
  const found = await backend.get(key)
  if (found === null) {
    throw runtimeError('SESSION_NOT_FOUND', `No session ${quoteForMessage(sessionId)}`, {
      sessionId,
    })
  }
  let parsed: ReturnType<typeof markerSchema.safeParse> | undefined
  try {
    parsed = markerSchema.safeParse(JSON.parse(new TextDecoder().decode(found.value)))
  } catch {
    parsed = undefined
  }
  if (parsed?.success !== true || parsed.data.session_id !== sessionId) {
    throw new AgentStateError(
      'CORRUPT',
      `The marker of session ${quoteForMessage(sessionId)} is corrupt`,
      { context: { sessionId, key } },
    )
  }
  return {
    conflictPolicy: parsed.data.conflict_policy ?? 'ignore',
    overrides: (parsed.data.policy_overrides ?? []).map((o) => ({
      writerId: o.writer_id,
      policy: o.policy,
      at: o.at,
    })),
    version: found.meta.version,
    raw: parsed.data,
  }
}

/**
 * Records in the marker that `writer` opened a handle with a weaker policy
 * than the session's (compare-and-set, so concurrent records all land).
 */
export async function recordOverride(
  backend: Backend,
  sessionId: string,
  writer: WriterIdentity,
  policy: ConflictPolicy,
  now: number,
): Promise<PolicyOverride> {
  const entry = { writer_id: writer.writerId, policy, at: new Date(now).toISOString() }
  for (let attempt = 1; ; attempt++) {
    const marker = await readMarker(backend, sessionId)
    const overrides = [...(marker.raw.policy_overrides ?? []), entry].slice(-MAX_OVERRIDES)
    try {
      await backend.put(
        sessionMarkerKey(sessionId),
        encode({ ...marker.raw, policy_overrides: overrides }),
        { ifMatch: marker.version, writer },
      )
      return { writerId: entry.writer_id, policy, at: entry.at }
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED') || attempt >= 64) throw error
    }
  }
}

/** What {@link inspectSession} reports. */
export interface SessionInfo {
  readonly sessionId: string
  /** The policy stored with the session. */
  readonly conflictPolicy: ConflictPolicy
  /** Handles opened with a weaker policy, oldest first (the newest 64). */
  readonly policyOverrides: readonly PolicyOverride[]
}

/**
 * The stored facts of a session, without opening a handle (for operators).
 *
 * @throws `SESSION_NOT_FOUND`, `CORRUPT`.
 */
export async function inspectSession(backend: Backend, sessionId: string): Promise<SessionInfo> {
  assertSessionId(sessionId)
  const marker = await readMarker(backend, sessionId)
  return { sessionId, conflictPolicy: marker.conflictPolicy, policyOverrides: marker.overrides }
}
