import { AgentStateError, type BackendErrorCode } from './errors.js'

/**
 * What a caller knows about an operation that failed in a backend's client
 * (a driver error, a lost connection, a failed fsync). Every backend answers
 * the same question with it, "could this operation have taken effect?", and
 * its own classification table refines the answer from the raw error.
 */
export interface FailedOperation {
  /** What was attempted, in words ("put", "write a record"); kept as `context.operation`. */
  readonly operation: string
  /**
   * Whether the operation may have taken effect before it failed: the
   * request may have reached the server (sent, then the connection dropped
   * or the reply timed out), or the change was already visible when a later
   * step failed (a rename done, its directory sync failed). `false` means
   * nothing happened: the request was never sent, or the storage refused it
   * as a whole.
   */
  readonly mayHaveApplied: boolean
}

/** Options of {@link backendFailure}. */
export interface BackendFailureOptions extends FailedOperation {
  /** For people: what failed and why. Quote keys with `quoteForMessage`; never a credential. */
  readonly message: string
  /**
   * The raw client error (a sanitized copy where the driver attaches request
   * details), or the `AgentStateError` this failure refines. A classification
   * table returns an `AgentStateError` it is given unchanged before it gets
   * here: that error was classified already.
   */
  readonly cause?: unknown
  /**
   * A code the classification table decided from the raw error itself
   * (`CORRUPT` for foreign data, `INVALID_KEY` for a key the server refuses,
   * `VALUE_TOO_LARGE`...). Without it, `mayHaveApplied` decides:
   * `INDETERMINATE` when the operation may have taken effect, `UNAVAILABLE`
   * when nothing happened.
   */
  readonly code?: BackendErrorCode
  /** Whether retrying may succeed; default by code (`UNAVAILABLE` is retryable, `INDETERMINATE` is not). */
  readonly retryable?: boolean
  /** More log-safe details (the key, a driver's error code); `operation` is added. */
  readonly context?: Readonly<Record<string, unknown>>
}

/**
 * The contract error for a failed backend operation: `INDETERMINATE` when
 * the operation may have taken effect, `UNAVAILABLE` when nothing happened,
 * or the `code` a backend's classification table chose. Each backend's
 * `errors.ts` holds only that table (which driver errors mean "not sent",
 * "corrupt", "not retryable") and builds every error through this function,
 * so every backend answers "could this write have landed?" the same way.
 *
 * @example
 * ```ts
 * try { await client.send(command) }
 * catch (error) {
 *   throw backendFailure({
 *     cause: error,
 *     operation: 'put',
 *     mayHaveApplied: true,
 *     message: `put of ${quoteForMessage(key)}: the connection dropped`,
 *   })
 * }
 * ```
 */
export function backendFailure(options: BackendFailureOptions): AgentStateError {
  const { cause } = options
  const code = options.code ?? (options.mayHaveApplied ? 'INDETERMINATE' : 'UNAVAILABLE')
  return new AgentStateError(code, options.message, {
    context: { operation: options.operation, ...options.context },
    ...(cause === undefined ? {} : { cause }),
    ...(options.retryable === undefined ? {} : { retryable: options.retryable }),
  })
}
