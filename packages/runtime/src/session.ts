import {
  AgentStateError,
  assertValidKey,
  type Backend,
  type Clock,
  isAgentStateError,
  normalizeWriter,
  systemClock,
  utf8ByteLength,
  type WriterIdentity,
} from '@agent-state/core'
import { z } from 'zod'
import {
  type ConflictListener,
  type ConflictPolicy,
  guardedDelete,
  guardedPut,
  processWarningListener,
} from './conflict-policy.js'
import { runtimeError } from './errors.js'
import { buildHandoffEnvelope, decodeHandoffEnvelope, type HandoffEnvelope } from './handoff.js'
import { assertSessionId, uuidv7 } from './ids.js'
import { handoffKey, sessionDataPrefix, sessionMarkerKey } from './layout.js'

/** Options of {@link openSession} and {@link resumeSession}. */
export interface SessionOptions {
  /** The session to open; default a fresh UUIDv7. See `ID_PATTERN` for the allowed form. */
  readonly sessionId?: string
  /** Who writes through this handle: a writer id, or a full identity (its `sessionId` is filled in). */
  readonly writer: string | Omit<WriterIdentity, 'sessionId'>
  /** What to do when another writer wrote a key last. Default `ignore`. */
  readonly conflictPolicy?: ConflictPolicy
  /** Receives warnings under `warn`. Default: `process.emitWarning` with code `WRITER_CONFLICT`. */
  readonly onConflict?: ConflictListener
  /** Clock for handoff timestamps. Default `Date.now`. */
  readonly clock?: Clock
}

const optionsSchema = z.object({
  sessionId: z.string().optional(),
  writer: z.union([z.string(), z.object({ writerId: z.string() }).loose()]),
  conflictPolicy: z.enum(['ignore', 'warn', 'error']).optional(),
  onConflict: z.custom<ConflictListener>((value) => typeof value === 'function').optional(),
  clock: z.custom<Clock>((value) => typeof value === 'function').optional(),
})

/** A session-scoped view of a backend: user keys, a handoff document, writer discipline. */
export interface Session {
  readonly sessionId: string
  readonly writer: WriterIdentity
  readonly conflictPolicy: ConflictPolicy
  /** The backend underneath (shared, not owned: closing the session does not close it). */
  readonly backend: Backend
  /** Writes text (as UTF-8) or bytes atomically under the conflict policy. */
  write(key: string, content: string | Uint8Array): Promise<void>
  /** The value as text, or `null` when missing. Throws `INVALID_ARGUMENT` when it is not UTF-8. */
  read(key: string): Promise<string | null>
  /** The value as bytes, or `null` when missing. */
  readBytes(key: string): Promise<Uint8Array | null>
  /** Every user key, recursively, in ascending UTF-8 byte order; internal records never appear. */
  list(): Promise<string[]>
  /** Deletes a key under the conflict policy; resolves whether it existed. Idempotent. */
  delete(key: string): Promise<boolean>
  /** Writes the versioned handoff envelope for `summary` (any plain JSON value). */
  handoff(summary: unknown): Promise<HandoffEnvelope>
  /** The validated handoff envelope, or `null` when none was written. */
  readHandoff(): Promise<HandoffEnvelope | null>
}

const markerSchema = z.object({
  _type: z.literal('agent_state_session'),
  version: z.literal(1),
  session_id: z.string(),
})

/**
 * Creates the session, or reopens it when it exists (seed 004's
 * `agent_state_init`).
 *
 * @throws `INVALID_SESSION_ID`, `INVALID_ARGUMENT`, or a backend error.
 */
export async function openSession(backend: Backend, options: SessionOptions): Promise<Session> {
  const settings = settle(options)
  const sessionId = options.sessionId ?? uuidv7(settings.clock())
  assertSessionId(sessionId)
  const marker = {
    _type: 'agent_state_session',
    version: 1,
    session_id: sessionId,
    created_at: new Date(settings.clock()).toISOString(),
  }
  try {
    await backend.put(
      sessionMarkerKey(sessionId),
      new TextEncoder().encode(JSON.stringify(marker)),
      {
        ifNoneMatch: '*',
        writer: { ...settings.writer, sessionId },
      },
    )
  } catch (error) {
    if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    await checkMarker(backend, sessionId)
  }
  return createSession(backend, sessionId, settings)
}

/**
 * Reopens an existing session (seed 004's `agent_state_resume`).
 *
 * @throws `SESSION_NOT_FOUND` when it was never opened.
 */
export async function resumeSession(
  backend: Backend,
  sessionId: string,
  options: Omit<SessionOptions, 'sessionId'>,
): Promise<Session> {
  const settings = settle(options)
  assertSessionId(sessionId)
  await checkMarker(backend, sessionId)
  return createSession(backend, sessionId, settings)
}

interface Settings {
  readonly writer: WriterIdentity
  readonly conflictPolicy: ConflictPolicy
  readonly onConflict: ConflictListener
  readonly clock: Clock
}

function settle(options: SessionOptions | Omit<SessionOptions, 'sessionId'>): Settings {
  const parsed = optionsSchema.safeParse(options)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `Invalid session options at ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    )
  }
  const writer = normalizeWriter(
    typeof options.writer === 'string' ? { writerId: options.writer } : options.writer,
  )
  return {
    writer,
    conflictPolicy: options.conflictPolicy ?? 'ignore',
    onConflict: options.onConflict ?? processWarningListener,
    clock: options.clock ?? systemClock,
  }
}

async function checkMarker(backend: Backend, sessionId: string): Promise<void> {
  const found = await backend.get(sessionMarkerKey(sessionId))
  if (found === null) {
    throw runtimeError('SESSION_NOT_FOUND', `No session ${JSON.stringify(sessionId)}`, {
      sessionId,
    })
  }
  let ok = false
  try {
    const parsed = markerSchema.safeParse(JSON.parse(new TextDecoder().decode(found.value)))
    ok = parsed.success && parsed.data.session_id === sessionId
  } catch {
    ok = false
  }
  if (!ok) {
    throw new AgentStateError(
      'CORRUPT',
      `The marker of session ${JSON.stringify(sessionId)} is corrupt`,
      {
        context: { sessionId },
      },
    )
  }
}

const fatalDecoder = new TextDecoder('utf-8', { fatal: true })

function createSession(backend: Backend, sessionId: string, settings: Settings): Session {
  const writer: WriterIdentity = { ...settings.writer, sessionId }
  const prefix = sessionDataPrefix(sessionId)
  const maxUserKeyBytes = backend.capabilities.maxKeyBytes - utf8ByteLength(prefix)

  function target(key: string) {
    assertValidKey(key, maxUserKeyBytes)
    return {
      backend,
      sessionId,
      key,
      storageKey: prefix + key,
      writer,
      policy: settings.conflictPolicy,
      onConflict: settings.onConflict,
    }
  }

  async function readBytes(key: string): Promise<Uint8Array | null> {
    assertValidKey(key, maxUserKeyBytes)
    const found = await backend.get(prefix + key)
    if (found === null) return null
    // Some backends hand out a Buffer; callers get the same plain Uint8Array from every backend.
    const { buffer, byteOffset, byteLength } = found.value
    return new Uint8Array(buffer, byteOffset, byteLength)
  }

  return {
    sessionId,
    writer,
    conflictPolicy: settings.conflictPolicy,
    backend,

    async write(key, content) {
      const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content
      if (!(bytes instanceof Uint8Array)) {
        throw new AgentStateError('INVALID_ARGUMENT', 'content must be a string or a Uint8Array')
      }
      await guardedPut(target(key), bytes)
    },

    async read(key) {
      const bytes = await readBytes(key)
      if (bytes === null) return null
      try {
        return fatalDecoder.decode(bytes)
      } catch (cause) {
        throw new AgentStateError(
          'INVALID_ARGUMENT',
          `The value of ${JSON.stringify(key)} is not UTF-8 text: use readBytes`,
          {
            context: { sessionId, key },
            cause,
          },
        )
      }
    },

    readBytes,

    async list() {
      const keys: string[] = []
      let cursor: string | undefined
      do {
        const page = await backend.list(cursor === undefined ? { prefix } : { prefix, cursor })
        for (const entry of page.entries) keys.push(entry.key.slice(prefix.length))
        cursor = page.cursor
      } while (cursor !== undefined)
      return keys
    },

    async delete(key) {
      return guardedDelete(target(key))
    },

    async handoff(summary) {
      const envelope = buildHandoffEnvelope(sessionId, writer, summary, settings.clock())
      await backend.put(handoffKey(sessionId), new TextEncoder().encode(JSON.stringify(envelope)), {
        writer,
      })
      return envelope
    },

    async readHandoff() {
      const found = await backend.get(handoffKey(sessionId))
      return found === null ? null : decodeHandoffEnvelope(found.value, sessionId)
    },
  }
}
