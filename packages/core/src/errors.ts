/**
 * The one error class of agent-state. Every failure a backend or the runtime
 * reports is an {@link AgentStateError} with a stable string `code`; raw client
 * errors (ioredis, the AWS SDK, better-sqlite3, node:fs) never escape, they are
 * kept as `cause`.
 */

/** Codes defined by the Backend contract. */
export const BACKEND_ERROR_CODES = [
  'INVALID_KEY',
  'INVALID_ARGUMENT',
  'NOT_FOUND',
  'PRECONDITION_FAILED',
  'LEASE_HELD',
  'LEASE_LOST',
  'VALUE_TOO_LARGE',
  'UNSUPPORTED',
  'CORRUPT',
  'INCOMPATIBLE_SCHEMA',
  'UNAVAILABLE',
  'INDETERMINATE',
  'CLOSED',
] as const

/** A code defined by the Backend contract. */
export type BackendErrorCode = (typeof BACKEND_ERROR_CODES)[number]

/**
 * Any error code. The runtime adds its own (for example `SESSION_NOT_FOUND`);
 * the `string & {}` keeps editor completion for the contract's codes.
 */
export type ErrorCode = BackendErrorCode | (string & {})

/** Codes that are retryable by default: nothing happened, or the caller may re-read and retry. */
const RETRYABLE_BY_DEFAULT: ReadonlySet<string> = new Set(['UNAVAILABLE', 'PRECONDITION_FAILED'])

/**
 * Marker shared by every copy of this package. `instanceof` fails when two
 * copies of `@agent-state/core` are installed side by side; the registered
 * symbol does not.
 */
const MARKER = Symbol.for('@agent-state/core/AgentStateError')

/** Options accepted by the {@link AgentStateError} constructor. */
export interface AgentStateErrorOptions {
  /** Whether retrying the same call may succeed. Defaults by code. */
  readonly retryable?: boolean
  /**
   * Structured details (the key, the current meta, the lease holder...).
   * Never put credentials here: context is meant to be logged.
   */
  readonly context?: Readonly<Record<string, unknown>>
  /** The underlying error, kept for debugging. */
  readonly cause?: unknown
}

/**
 * The error class of agent-state.
 *
 * @example
 * ```ts
 * try { await backend.put(key, value, { ifMatch: version }) }
 * catch (error) {
 *   if (isAgentStateError(error, 'PRECONDITION_FAILED')) reload(error.context.current)
 *   else throw error
 * }
 * ```
 */
export class AgentStateError extends Error {
  /** Stable machine-readable code; branch on this, never on `message`. */
  readonly code: ErrorCode
  /** Whether retrying the same operation may succeed. */
  readonly retryable: boolean
  /** Structured, log-safe details. */
  readonly context: Readonly<Record<string, unknown>>
  /** Marks the class across duplicate copies of core; see {@link isAgentStateError}. */
  readonly [MARKER] = true

  /**
   * Creates an error that backends and stores throw.
   *
   * @param code - a contract code (`BACKEND_ERROR_CODES`) or a package's own
   *   stable code; callers branch on it.
   * @param message - for people: names what failed (a key, a URL through
   *   `redactUrl`), never a credential.
   * @param options - `retryable` (default: `true` for `UNAVAILABLE`, by code),
   *   `context` (structured, log-safe details), `cause` (the raw client error,
   *   which must never escape on its own).
   * @example
   * ```ts
   * throw new AgentStateError('PRECONDITION_FAILED', `record ${key} changed`)
   * throw new AgentStateError('UNAVAILABLE', 'server refused the connection', { cause: error })
   * ```
   */
  constructor(code: ErrorCode, message: string, options: AgentStateErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'AgentStateError'
    this.code = code
    this.retryable = options.retryable ?? RETRYABLE_BY_DEFAULT.has(code)
    this.context = options.context ?? {}
  }
}

/**
 * Whether `error` is an {@link AgentStateError} (from any copy of this
 * package), optionally with the given code.
 */
export function isAgentStateError(error: unknown, code?: ErrorCode): error is AgentStateError {
  if (typeof error !== 'object' || error === null) return false
  if ((error as { [MARKER]?: unknown })[MARKER] !== true) return false
  return code === undefined || (error as AgentStateError).code === code
}
