import { type AgentStateError, type BackendFailureOptions, backendFailure } from '@agent-state/core'
import { RequestDeadlineError } from './request-deadline.js'

/**
 * How an S3 request ended, as far as its effect is concerned:
 * - `conflict`: the server refused the precondition (412, 409, 404 on If-Match); nothing was written;
 * - `unsent`: the request never reached the server (refused connection, DNS, connect timeout);
 * - `ambiguous`: it may have been applied (5xx, timeout or dropped connection after sending):
 *   core's `mayHaveApplied`;
 * - `fatal`: a definite refusal that retrying will not fix (403, 400, missing bucket...).
 */
export type RequestOutcome = 'conflict' | 'unsent' | 'ambiguous' | 'fatal'

interface SdkErrorShape {
  name?: string
  code?: string
  message?: string
  $metadata?: { httpStatusCode?: number }
}

const UNSENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
])

/** The HTTP status of an SDK error, if the server answered. */
export function statusOf(error: unknown): number | undefined {
  return (error as SdkErrorShape | null)?.$metadata?.httpStatusCode
}

/** The S3 error code (`NoSuchKey`, `PreconditionFailed`...) or Node error code. */
export function sdkErrorCode(error: unknown): string {
  const shape = (error ?? {}) as SdkErrorShape
  return shape.code ?? shape.name ?? 'Error'
}

/** Classifies a failed request; see {@link RequestOutcome}. */
export function classify(error: unknown, conditional: boolean): RequestOutcome {
  const status = statusOf(error)
  const code = sdkErrorCode(error)
  // Signing failed before anything was sent, and retrying will not find credentials.
  if (isMissingCredentials(error)) return 'fatal'
  if (status === undefined || status === 0) {
    if (UNSENT_CODES.has(code)) return 'unsent'
    const message = String((error as SdkErrorShape | null)?.message ?? '')
    if (message.includes('without establishing a connection')) return 'unsent'
    return 'ambiguous'
  }
  if (status === 412 || status === 409) return conditional ? 'conflict' : 'fatal'
  if (status === 404 && conditional && code !== 'NoSuchBucket') return 'conflict'
  if (status >= 500 || status === 408 || status === 429) return 'ambiguous'
  return 'fatal'
}

/**
 * Whether the SDK found no credentials to sign with (none given and none in
 * its default provider chain: environment, profile, container or instance
 * metadata). The request was never sent.
 */
export function isMissingCredentials(error: unknown): boolean {
  return (error as SdkErrorShape | null)?.name === 'CredentialsProviderError'
}

/**
 * A copy of an SDK or Node error that keeps only its name, code, status and
 * message: the SDK's error objects carry request and response details that
 * must never end up in logs next to credentials.
 */
export function sanitizeCause(error: unknown): Error {
  const shape = (error ?? {}) as SdkErrorShape
  const status = statusOf(error)
  const copy = new Error(
    `${sdkErrorCode(error)}${status === undefined ? '' : ` (HTTP ${status})`}: ${String(shape.message ?? error).slice(0, 300)}`,
  )
  copy.name = shape.name ?? 'Error'
  return copy
}

/**
 * Maps a failed request that is not a precondition outcome to a contract
 * error (see core's `backendFailure`). `what` names the operation and object
 * for the message. Nothing here may have applied: reads and listings change
 * nothing, and the write path calls this only for a request that was refused
 * or never sent; a write that may have landed is settled by reading it back
 * (`s3-record-store.ts`), and is `INDETERMINATE` only when that cannot tell.
 */
export function toAgentStateError(error: unknown, what: string, key?: string): AgentStateError {
  const status = statusOf(error)
  const code = sdkErrorCode(error)
  const context: Record<string, unknown> = { s3Code: code }
  if (status !== undefined) context.httpStatus = status
  if (key !== undefined) context.key = key
  const fail = (text: string, more: Partial<BackendFailureOptions> = {}) =>
    backendFailure({
      operation: what,
      mayHaveApplied: false,
      cause: sanitizeCause(error),
      message: `${what}: ${text}`,
      context,
      ...more,
    })
  if (isMissingCredentials(error)) {
    return fail(
      'no S3 credentials: pass the credentials option, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or an AWS profile); nothing was sent',
      { context: { ...context, reason: 'credentials-missing' }, retryable: false },
    )
  }
  if (error instanceof RequestDeadlineError) {
    return fail(
      `the S3 server gave no complete answer within requestTimeoutMs (${error.timeoutMs} ms)`,
      { context: { ...context, reason: 'timeout', timeoutMs: error.timeoutMs } },
    )
  }
  if (code === 'NoSuchBucket') return fail('the bucket does not exist', { retryable: false })
  if (code === 'KeyTooLongError') {
    return fail('the server rejects the key as too long', { code: 'INVALID_KEY' })
  }
  if (code === 'EntityTooLarge') {
    return fail('the server rejects the value size', { code: 'VALUE_TOO_LARGE' })
  }
  if (status === 401 || status === 403) {
    return fail(`access denied (${code}); check the credentials and bucket policy`, {
      retryable: false,
    })
  }
  if (classify(error, false) === 'fatal') {
    return fail(`the server refused the request (${code})`, { retryable: false })
  }
  return fail(
    status === undefined || status === 0
      ? `the S3 server is unreachable (${code})`
      : `the S3 server failed the request (${code}, HTTP ${status})`,
  )
}
