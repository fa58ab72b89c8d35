import { AgentStateError, isAgentStateError } from '@agent-state/core'

/**
 * Maps node-postgres errors to contract codes. Raw errors never escape; they
 * stay as `cause`. Messages name the operation and the SQLSTATE, never the
 * connection string (it may hold a password): `connection.ts` names the
 * server by host, port, database and user only.
 */

/** The SQLSTATE of a PostgreSQL error (`"40001"`), if the server sent one. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

/**
 * SQLSTATEs meaning "the statement was rolled back and nothing changed, try
 * again later": a cancelled statement (`statement_timeout`), a lock wait
 * over `lock_timeout`, a serialization failure or deadlock, too many
 * connections, a server starting up.
 */
const TRANSIENT = new Set(['57014', '55P03', '40001', '40P01', '53300', '57P03'])

/**
 * SQLSTATEs meaning "the connection went away": the server shut down
 * (`57P01` also comes from `pg_terminate_backend`), crashed, or the link
 * failed. During a write nobody knows whether it committed.
 */
function isConnectionLoss(state: string | undefined): boolean {
  return state === '57P01' || state === '57P02' || (state?.startsWith('08') ?? false)
}

/**
 * Converts any error thrown while talking to PostgreSQL into an
 * `AgentStateError`. `operation` names what was attempted; `writing` says
 * whether a statement that changes data may have reached the server, which
 * turns a lost connection into `INDETERMINATE` instead of `UNAVAILABLE`.
 */
export function toAgentStateError(
  error: unknown,
  operation: string,
  writing: boolean,
): AgentStateError {
  if (isAgentStateError(error)) return error
  const state = sqlState(error)
  const context = { operation, sqlState: state ?? null }
  if (state === 'XX001' || state === 'XX002') {
    return new AgentStateError(
      'CORRUPT',
      `PostgreSQL reported damaged data (${state}) during ${operation}`,
      { context, cause: error },
    )
  }
  if (state !== undefined && TRANSIENT.has(state)) {
    return new AgentStateError(
      'UNAVAILABLE',
      `PostgreSQL ${operation} did not run (${state}: ${reason(state)}); nothing was written`,
      { context, cause: error, retryable: true },
    )
  }
  if (state === undefined || isConnectionLoss(state)) {
    if (writing) {
      return new AgentStateError(
        'INDETERMINATE',
        `The PostgreSQL connection was lost during ${operation}; the write may or may not have been committed`,
        { context, cause: error, retryable: true },
      )
    }
    return new AgentStateError(
      'UNAVAILABLE',
      `PostgreSQL is unreachable or dropped the connection during ${operation}`,
      { context, cause: error, retryable: true },
    )
  }
  // Privileges, a missing database, a failed login, a full disk…: the
  // statement was refused as a whole, so nothing happened.
  return new AgentStateError('UNAVAILABLE', `PostgreSQL ${operation} failed (${state})`, {
    context,
    cause: error,
    retryable: state.startsWith('53'),
  })
}

function reason(state: string): string {
  switch (state) {
    case '57014':
      return 'statement_timeout'
    case '55P03':
      return 'lock_timeout'
    case '57P03':
      return 'the server is starting or shutting down'
    case '53300':
      return 'too many connections'
    default:
      return 'a concurrent transaction conflicted'
  }
}

/** `CORRUPT` for a row whose stored value or columns fail their checks. */
export function corruptRow(key: string, problem: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Row of key ${JSON.stringify(key)} is corrupt: ${problem}`,
    { context: { key, problem } },
  )
}
