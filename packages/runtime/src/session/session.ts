import {
  AgentStateError,
  assertValidKey,
  type Backend,
  type Clock,
  normalizeWriter,
  quoteForMessage,
  systemClock,
  utf8ByteLength,
  type WriterIdentity,
  walkList,
} from '@agent-state/core'
import { z } from 'zod'
import { assertSessionId, uuidv7 } from '../shared/ids.js'
import { handoffKey, sessionDataPrefix } from '../shared/layout.js'
import {
  type ConflictListener,
  type ConflictPolicy,
  guardedDelete,
  guardedPut,
  processWarningListener,
} from './conflict-policy.js'
import {
  buildHandoffEnvelope,
  decodeHandoffEnvelope,
  HANDOFF_KEY,
  type HandoffEnvelope,
} from './handoff.js'
import { redactLocation, type StateHandle } from './session-handle.js'
import {
  createMarker,
  type PolicyOverride,
  readMarker,
  recordOverride,
  weakerThan,
} from './session-marker.js'

/** Options of {@link openSession} and {@link resumeSession}. */
export interface SessionOptions {
  /** The session to open; default a fresh UUIDv7. See `ID_PATTERN` for the allowed form. */
  readonly sessionId?: string
  /**
   * Who writes through this handle: a writer id, or a full identity. Its
   * `sessionId` is filled in; `stageId` and `workerId` default to `writerId`.
   */
  readonly writer: string | Omit<WriterIdentity, 'sessionId'>
  /**
   * What to do when another writer wrote a key last. A new session stores its
   * policy (default `ignore`); a reopened session applies the stored policy
   * when this is left out. Choosing a weaker policy than the session's is
   * allowed, and recorded in the session marker.
   */
  readonly conflictPolicy?: ConflictPolicy
  /**
   * Where the backend lives (the root directory or URL it was opened with),
   * reported by `handle.root` with credentials removed. The Backend contract
   * does not expose it, so the caller passes it. Default: `null`.
   */
  readonly location?: string
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
  location: z.string().optional(),
})

/** A session-scoped view of a backend: user keys, a handoff document, writer discipline. */
export interface Session {
  readonly sessionId: string
  /** The writer identity, with `sessionId`, `stageId` and `workerId` filled in. */
  readonly writer: Required<WriterIdentity>
  /** The policy in force for this handle. */
  readonly conflictPolicy: ConflictPolicy
  /** The policy stored with the session (what handles that choose none get). */
  readonly sessionConflictPolicy: ConflictPolicy
  /** Set when this handle chose a weaker policy than the session's; recorded in the marker. */
  readonly policyOverride: PolicyOverride | null
  /** The stable handle shape (docs/runtime/sessions.md): backend, root, session id, handoff key, policy, writer. */
  readonly handle: StateHandle
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
  /**
   * Writes the versioned handoff envelope for `summary` (any plain JSON
   * value), under the conflict policy like every other write.
   */
  handoff(summary: unknown): Promise<HandoffEnvelope>
  /** The validated handoff envelope, or `null` when none was written. */
  readHandoff(): Promise<HandoffEnvelope | null>
}

/**
 * Creates the session, or reopens it when it exists (docs/runtime/sessions.md).
 * A new session stores its conflict policy.
 *
 * @throws `INVALID_SESSION_ID`, `INVALID_ARGUMENT`, `CORRUPT` (marker), or a backend error.
 */
export async function openSession(backend: Backend, options: SessionOptions): Promise<Session> {
  const settings = settle(options)
  const sessionId = options.sessionId ?? uuidv7(settings.clock())
  assertSessionId(sessionId)
  const writer = { ...settings.writer, sessionId }
  const created = await createMarker(
    backend,
    sessionId,
    settings.conflictPolicy ?? 'ignore',
    writer,
    settings.clock(),
  )
  if (created) {
    return createSession(backend, sessionId, settings, settings.conflictPolicy ?? 'ignore', null)
  }
  return reopen(backend, sessionId, settings)
}

/**
 * Reopens an existing session (docs/runtime/sessions.md), with the
 * session's stored conflict policy unless `conflictPolicy` is given.
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
  return reopen(backend, sessionId, settings)
}

async function reopen(backend: Backend, sessionId: string, settings: Settings): Promise<Session> {
  const marker = await readMarker(backend, sessionId)
  const stored = marker.conflictPolicy
  const chosen = settings.conflictPolicy ?? stored
  const override = weakerThan(chosen, stored)
    ? await recordOverride(
        backend,
        sessionId,
        { ...settings.writer, sessionId },
        chosen,
        settings.clock(),
      )
    : null
  return createSession(
    backend,
    sessionId,
    { ...settings, conflictPolicy: chosen },
    stored,
    override,
  )
}

interface Settings {
  readonly writer: Omit<Required<WriterIdentity>, 'sessionId'>
  /** `undefined`: the session's stored policy. */
  readonly conflictPolicy: ConflictPolicy | undefined
  readonly onConflict: ConflictListener
  readonly clock: Clock
  readonly location: string | null
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
  const given = normalizeWriter(
    typeof options.writer === 'string' ? { writerId: options.writer } : options.writer,
  )
  // The handle's writer (docs/runtime/sessions.md): a writer that names no stage or worker is its own stage and worker.
  const writer = {
    writerId: given.writerId,
    stageId: given.stageId ?? given.writerId,
    workerId: given.workerId ?? given.writerId,
  }
  return {
    writer,
    conflictPolicy: options.conflictPolicy,
    onConflict: options.onConflict ?? processWarningListener,
    clock: options.clock ?? systemClock,
    location: options.location === undefined ? null : redactLocation(options.location),
  }
}

const fatalDecoder = new TextDecoder('utf-8', { fatal: true })

function createSession(
  backend: Backend,
  sessionId: string,
  settings: Settings,
  sessionConflictPolicy: ConflictPolicy,
  policyOverride: PolicyOverride | null,
): Session {
  const writer: Required<WriterIdentity> = Object.freeze({ ...settings.writer, sessionId })
  const policy = settings.conflictPolicy ?? sessionConflictPolicy
  const handle: StateHandle = Object.freeze({
    _type: 'state_handle' as const,
    backend: backend.name,
    root: settings.location,
    sessionId,
    handoffKey: HANDOFF_KEY,
    conflictPolicy: policy,
    writer,
  })
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
      policy,
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
    conflictPolicy: policy,
    sessionConflictPolicy,
    policyOverride,
    handle,
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
          `The value of ${quoteForMessage(key)} is not UTF-8 text: use readBytes`,
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
      for await (const page of walkList(backend, { prefix })) {
        for (const entry of page.entries) keys.push(entry.key.slice(prefix.length))
      }
      return keys
    },

    async delete(key) {
      return guardedDelete(target(key))
    },

    async handoff(summary) {
      const envelope = buildHandoffEnvelope(sessionId, writer, summary, settings.clock())
      await guardedPut(
        {
          backend,
          sessionId,
          key: HANDOFF_KEY,
          storageKey: handoffKey(sessionId),
          writer,
          policy,
          onConflict: settings.onConflict,
        },
        new TextEncoder().encode(JSON.stringify(envelope)),
      )
      return envelope
    },

    async readHandoff() {
      const found = await backend.get(handoffKey(sessionId))
      return found === null ? null : decodeHandoffEnvelope(found.value, sessionId)
    },
  }
}
