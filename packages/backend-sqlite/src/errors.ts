import { AgentStateError, isAgentStateError, type ValueMeta } from '@agent-state/core'
import type { LoadedState } from './row-codec.js'

/**
 * Maps better-sqlite3's errors to contract codes. Raw `SqliteError`s never
 * escape; they stay as `cause`. Errors of an operation do not repeat the
 * database path (the caller knows it); errors of opening the file name it
 * (`connection.ts`), since that is where a wrong path shows.
 */

/** The extended result code of a better-sqlite3 error (`"SQLITE_BUSY_SNAPSHOT"`), if it has one. */
export function sqliteCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined
}

/** Whether the error means "another connection holds a lock": worth waiting and retrying. */
export function isBusy(error: unknown): boolean {
  const code = sqliteCode(error)
  return code !== undefined && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))
}

/**
 * Converts any error thrown while talking to SQLite into an
 * `AgentStateError`. `operation` names what was attempted (for the message);
 * `writing` says whether a commit may have been under way, which turns an
 * I/O error into `INDETERMINATE` instead of `UNAVAILABLE`.
 */
export function toAgentStateError(
  error: unknown,
  operation: string,
  writing: boolean,
): AgentStateError {
  if (isAgentStateError(error)) return error
  const code = sqliteCode(error)
  const context = { operation, sqliteCode: code ?? null }
  if (code === undefined) {
    return new AgentStateError('UNAVAILABLE', `SQLite ${operation} failed unexpectedly`, {
      context,
      cause: error,
      retryable: false,
    })
  }
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return new AgentStateError(
      'CORRUPT',
      `The SQLite database is corrupt or not a database (${code}) during ${operation}`,
      { context, cause: error },
    )
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return new AgentStateError(
      'UNAVAILABLE',
      `The SQLite database stayed locked (${code}) during ${operation}: a process holds the database lock (another connection, perhaps of a stopped process)`,
      { context, cause: error },
    )
  }
  if (writing && code.startsWith('SQLITE_IOERR')) {
    return new AgentStateError(
      'INDETERMINATE',
      `SQLite reported an I/O error (${code}) during ${operation}; the write may or may not have been committed`,
      { context, cause: error },
    )
  }
  // SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_IOERR on a read...:
  // SQLite rolled the statement back, so nothing happened.
  const transient = code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')
  return new AgentStateError('UNAVAILABLE', `SQLite ${operation} failed (${code})`, {
    context,
    cause: error,
    retryable: transient,
  })
}

/**
 * Adds the stored size to a failed precondition's `context.current`: writes
 * read the state without its value, so core's meta of it says size 0.
 */
export function withStoredSize(error: unknown, loaded: LoadedState | undefined): unknown {
  if (loaded === undefined || !isAgentStateError(error, 'PRECONDITION_FAILED')) return error
  const current = error.context.current as ValueMeta | null | undefined
  if (current === null || current === undefined) return error
  return new AgentStateError(error.code, error.message, {
    context: { ...error.context, current: { ...current, size: loaded.size } },
    retryable: error.retryable,
  })
}
