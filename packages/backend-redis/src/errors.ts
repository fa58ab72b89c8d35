import {
  type AgentStateError,
  type BackendErrorCode,
  backendFailure,
  type FailedOperation,
  isAgentStateError,
} from '@agent-state/core'

/**
 * Maps ioredis errors to contract errors (see core's `backendFailure`). The
 * question that decides the code is whether the command may have reached the
 * server; the caller answers it with `mayHaveApplied` (`false` while
 * connecting, `true` once a command is handed to the client), and this table
 * narrows it down from the error:
 * - it was never written (no ready connection, refused, offline): `UNAVAILABLE`;
 * - it was written and then the connection dropped or the reply timed out:
 *   `INDETERMINATE` (it may have been applied);
 * - the server replied with an error: the script did not run its writes
 *   (our scripts check before they write), so `UNAVAILABLE`, except a
 *   `WRONGTYPE` (someone else's data under our key: `CORRUPT`).
 * Raw errors never escape; a sanitized copy (message, name, code, no command
 * arguments, secrets redacted) is kept as `cause`.
 */

/** Server replies meaning "not now, nothing done": retry may succeed. */
const TRANSIENT_REPLIES = [
  'LOADING',
  'BUSY',
  'TRYAGAIN',
  'CLUSTERDOWN',
  'MASTERDOWN',
  'READONLY',
  'OOM',
  'NOREPLICAS',
  'MOVED',
  'ASK',
]
const AUTH_REPLIES = ['NOAUTH', 'WRONGPASS', 'NOPERM']

/** Node error codes of a connection that was never established. */
const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
])

/** Messages of ioredis for a command it refused to send. */
const NOT_SENT_MESSAGES = [
  "Stream isn't writeable",
  "isn't ready and enableOfflineQueue",
  'None of startup nodes is available',
  'Failed to refresh slots cache',
]

function describe(error: unknown): { name: string; message: string; code: string | undefined } {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return {
      name: error.name,
      message: error.message,
      code: typeof code === 'string' ? code : undefined,
    }
  }
  return { name: 'Error', message: String(error), code: undefined }
}

/** Replaces every secret in `text` with `***`. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text
  for (const secret of secrets) {
    if (secret.length > 0) out = out.split(secret).join('***')
  }
  return out
}

/**
 * A copy of `error` that is safe to keep and log: name, message (secrets
 * redacted) and code only. ioredis attaches the failed command and its
 * arguments (an `AUTH` password, user values) to some errors; those are dropped.
 */
export function sanitizeError(error: unknown, secrets: readonly string[]): Error {
  const { name, message, code } = describe(error)
  const copy = new Error(redactSecrets(message, secrets))
  copy.name = name
  if (code !== undefined) (copy as { code?: string }).code = code
  return copy
}

/** The contract error for an ioredis failure during `failed.operation`. */
export function mapRedisError(
  error: unknown,
  failed: FailedOperation,
  secrets: readonly string[],
): AgentStateError {
  if (isAgentStateError(error)) return error
  const cause = sanitizeError(error, secrets)
  const { name, code } = describe(error)
  const message = cause.message
  const fail = (
    text: string,
    outcome: { mayHaveApplied: boolean; code?: BackendErrorCode; retryable?: boolean },
  ) =>
    backendFailure({
      operation: failed.operation,
      cause,
      message: `Redis ${failed.operation}: ${text}: ${message}`,
      ...outcome,
    })
  const refused = (text: string, retryable?: boolean) =>
    fail(text, { mayHaveApplied: false, ...(retryable === undefined ? {} : { retryable }) })

  if (name === 'ReplyError' || /^[A-Z]+ /.test(message)) {
    const word = message.split(' ', 1)[0] ?? ''
    if (AUTH_REPLIES.includes(word)) return refused('authentication failed', false)
    if (TRANSIENT_REPLIES.includes(word)) return refused('server not ready')
    if (word === 'WRONGTYPE') {
      return fail('a key of this namespace holds foreign data', {
        mayHaveApplied: false,
        code: 'CORRUPT',
      })
    }
    if (name === 'ReplyError') return refused('server refused the command', false)
  }
  if (!failed.mayHaveApplied || (code !== undefined && CONNECT_CODES.has(code))) {
    return refused('cannot connect')
  }
  if (name === 'ClusterAllFailedError' || NOT_SENT_MESSAGES.some((m) => message.includes(m))) {
    return refused('no ready connection, command not sent')
  }
  // Written to the socket, then a timeout, a dropped connection or a close:
  // the server may or may not have applied it.
  return fail('outcome unknown (the command may have been applied)', { mayHaveApplied: true })
}
