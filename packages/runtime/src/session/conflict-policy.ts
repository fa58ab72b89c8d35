import {
  type Backend,
  isAgentStateError,
  quoteForMessage,
  type ValueMeta,
  type WriterIdentity,
} from '@agent-state/core'
import { runtimeError } from '../shared/errors.js'

/**
 * What a session does when the key it writes was last written by another
 * writer (the two-writer discipline, docs/runtime/sessions.md):
 * - `ignore`: write silently;
 * - `warn`: write, then report a {@link ConflictWarning};
 * - `error`: refuse with `WRITER_CONFLICT` and write nothing.
 */
export type ConflictPolicy = 'ignore' | 'warn' | 'error'

/** Reported under the `warn` policy after an overlapping write or delete succeeded. */
export interface ConflictWarning {
  readonly code: 'WRITER_CONFLICT'
  readonly sessionId: string
  /** The key as the session user sees it (without the runtime's prefix). */
  readonly key: string
  readonly operation: 'write' | 'delete'
  /** Who wrote the key last, or `null` when the value carries no writer. */
  readonly previousWriter: WriterIdentity | null
  readonly writer: WriterIdentity
}

/** Receives conflict warnings under the `warn` policy. */
export type ConflictListener = (warning: ConflictWarning) => void

/**
 * How many lost compare-and-set races a write retries before giving up with
 * `PRECONDITION_FAILED`. Each retry re-reads, so a loss only repeats while
 * other writers keep winning.
 */
const MAX_ATTEMPTS = 64

/** A value written by no one, or by someone with another writer id, is an overlap. */
function overlaps(meta: ValueMeta, writer: WriterIdentity): boolean {
  return meta.writer?.writerId !== writer.writerId
}

interface GuardedTarget {
  readonly backend: Backend
  readonly sessionId: string
  readonly key: string
  readonly storageKey: string
  readonly writer: WriterIdentity
  readonly policy: ConflictPolicy
  readonly onConflict: ConflictListener
}

/**
 * Writes under the conflict policy. The check and the write are one atomic
 * step: the write is conditional on the version the check saw (`ifMatch`, or
 * `ifNoneMatch: '*'` for a missing key), and a lost race re-checks from the
 * start, so two writers under `error` can never both succeed.
 */
export async function guardedPut(target: GuardedTarget, value: Uint8Array): Promise<ValueMeta> {
  const { backend, storageKey, writer, policy } = target
  if (policy === 'ignore') return backend.put(storageKey, value, { writer })
  for (let attempt = 1; ; attempt++) {
    const current = await backend.head(storageKey)
    const conflict = current !== null && overlaps(current, writer)
    if (conflict && policy === 'error') throw conflictError(target, current, 'write')
    try {
      const meta = await backend.put(
        storageKey,
        value,
        current === null ? { ifNoneMatch: '*', writer } : { ifMatch: current.version, writer },
      )
      if (conflict) report(target, current, 'write')
      return meta
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED') || attempt >= MAX_ATTEMPTS) throw error
    }
  }
}

/**
 * Deletes under the conflict policy, atomically as {@link guardedPut}.
 * Resolves whether a value existed; deleting a missing key is not an error.
 */
export async function guardedDelete(target: GuardedTarget): Promise<boolean> {
  const { backend, storageKey, writer, policy } = target
  if (policy === 'ignore') return backend.delete(storageKey)
  for (let attempt = 1; ; attempt++) {
    const current = await backend.head(storageKey)
    if (current === null) return false
    const conflict = overlaps(current, writer)
    if (conflict && policy === 'error') throw conflictError(target, current, 'delete')
    try {
      const existed = await backend.delete(storageKey, { ifMatch: current.version })
      if (conflict) report(target, current, 'delete')
      return existed
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED') || attempt >= MAX_ATTEMPTS) throw error
    }
  }
}

function conflictError(target: GuardedTarget, current: ValueMeta, operation: 'write' | 'delete') {
  return runtimeError(
    'WRITER_CONFLICT',
    `Refusing to ${operation} ${quoteForMessage(target.key)} in session ${target.sessionId}: ` +
      `it was last written by ${quoteNullable(current.writer?.writerId)}, not ${quoteForMessage(target.writer.writerId)}`,
    {
      sessionId: target.sessionId,
      key: target.key,
      operation,
      previousWriter: current.writer,
      writer: target.writer,
    },
  )
}

function report(target: GuardedTarget, current: ValueMeta, operation: 'write' | 'delete'): void {
  target.onConflict({
    code: 'WRITER_CONFLICT',
    sessionId: target.sessionId,
    key: target.key,
    operation,
    previousWriter: current.writer,
    writer: target.writer,
  })
}

/**
 * The listener used under `warn` when the caller gives none: a Node process
 * warning with code `WRITER_CONFLICT` (observable with `process.on('warning')`).
 */
export const processWarningListener: ConflictListener = (warning) => {
  process.emitWarning(
    `agent-state: ${warning.operation} of ${quoteForMessage(warning.key)} in session ${warning.sessionId} ` +
      `overlaps writer ${quoteNullable(warning.previousWriter?.writerId)}`,
    { code: 'WRITER_CONFLICT', detail: `writer ${warning.writer.writerId}` },
  )
}

/** A writer id for a message, or `null` when the value had no writer. */
function quoteNullable(writerId: string | undefined): string {
  return writerId === undefined ? 'null' : quoteForMessage(writerId)
}
