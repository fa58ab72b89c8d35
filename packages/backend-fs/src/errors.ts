import {
  type AgentStateError,
  backendFailure,
  type FailedOperation,
  isAgentStateError,
} from '@agent-state/core'

/** The errno code of a node:fs error, if any. */
export function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** Errors retrying cannot fix: permissions, a read-only filesystem. */
const PERMANENT = new Set([
  'EACCES',
  'EPERM',
  'EROFS',
  'ENOTDIR',
  'EISDIR',
  'ELOOP',
  'ENAMETOOLONG',
])

/**
 * Wraps a raw node:fs error as an `AgentStateError` (see core's
 * `backendFailure`). An operation that may have applied (its rename landed,
 * a later step failed) is `INDETERMINATE`; before that nothing is visible
 * (`UNAVAILABLE`, not retryable for the {@link PERMANENT} errnos). Paths
 * inside the store are fine in context; nothing else is added.
 */
export function fsError(
  error: unknown,
  failed: FailedOperation,
  context: Record<string, unknown>,
): AgentStateError {
  if (isAgentStateError(error)) return error
  const errno = errnoOf(error) ?? 'UNKNOWN'
  return backendFailure({
    ...failed,
    cause: error,
    message: `fs backend could not ${failed.operation} (${errno})`,
    context: { ...context, errno },
    ...(failed.mayHaveApplied ? {} : { retryable: !PERMANENT.has(errno) }),
  })
}
