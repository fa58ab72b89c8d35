import {
  AgentStateError,
  type BackendFailureOptions,
  backendFailure,
  type FailedOperation,
  isAgentStateError,
  type ValueMeta,
} from '@agent-state/core'
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
 * `AgentStateError` (see core's `backendFailure`). `mayHaveApplied` says
 * whether a commit may have been under way: only then is an I/O error
 * `INDETERMINATE`. Every other failure SQLite reports rolled the statement
 * back, so nothing happened.
 */
export function toAgentStateError(error: unknown, failed: FailedOperation): AgentStateError {
  if (isAgentStateError(error)) return error
  const code = sqliteCode(error)
  const { operation } = failed
  const fail = (message: string, more: Partial<BackendFailureOptions> = {}) =>
    backendFailure({
      ...failed,
      cause: error,
      message,
      context: { sqliteCode: code ?? null },
      ...more,
    })
  if (code === undefined) {
    return fail(`SQLite ${operation} failed unexpectedly`, {
      mayHaveApplied: false,
      retryable: false,
    })
  }
  if (code.startsWith('SQLITE_CORRUPT') || code === 'SQLITE_NOTADB') {
    return fail(`The SQLite database is corrupt or not a database (${code}) during ${operation}`, {
      code: 'CORRUPT',
    })
  }
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return fail(
      `The SQLite database stayed locked (${code}) during ${operation}: a process holds the database lock (another connection, perhaps of a stopped process)`,
      { mayHaveApplied: false },
    )
  }
  if (failed.mayHaveApplied && code.startsWith('SQLITE_IOERR')) {
    return fail(
      `SQLite reported an I/O error (${code}) during ${operation}; the write may or may not have been committed`,
    )
  }
  // SQLITE_FULL, SQLITE_CANTOPEN, SQLITE_READONLY, SQLITE_IOERR on a read...:
  // SQLite rolled the statement back, so nothing happened.
  const transient = code === 'SQLITE_FULL' || code.startsWith('SQLITE_IOERR')
  return fail(`SQLite ${operation} failed (${code})`, {
    mayHaveApplied: false,
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
