import { AgentStateError, isAgentStateError } from '@agent-state/core'

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
 * Wraps a raw node:fs error as an `AgentStateError`. `landed` says whether the
 * failing step came after the write became visible (rename done): then the
 * outcome is `INDETERMINATE`, otherwise nothing was done (`UNAVAILABLE`).
 * Paths inside the store are fine in context; nothing else is added.
 */
export function fsError(
  error: unknown,
  action: string,
  context: Record<string, unknown>,
  landed = false,
): AgentStateError {
  if (isAgentStateError(error)) return error
  const code = errnoOf(error) ?? 'UNKNOWN'
  const message = `fs backend could not ${action} (${code})`
  if (landed) {
    return new AgentStateError('INDETERMINATE', message, {
      context: { ...context, errno: code },
      cause: error,
    })
  }
  return new AgentStateError('UNAVAILABLE', message, {
    context: { ...context, errno: code },
    cause: error,
    retryable: !PERMANENT.has(code),
  })
}
