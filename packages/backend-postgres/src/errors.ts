import {
  AgentStateError,
  type BackendErrorCode,
  backendFailure,
  type FailedOperation,
  isAgentStateError,
  quoteForMessage,
} from '@agent-state/core'

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
 * PgBouncer answers with SQLSTATE `08P01` both when it refused a query
 * before sending it anywhere and when the server connection carrying it
 * died: only its message tells them apart. These messages (PgBouncer 1.x)
 * mean the query never left PgBouncer, so nothing was done (`UNAVAILABLE`
 * even for a write); any other `08P01` is a lost connection.
 */
const PGBOUNCER_NOT_SENT = [
  'server login has been failing',
  'pgbouncer cannot connect to server',
  'query_wait_timeout',
  'no more connections allowed',
  'client_login_timeout',
]

/** Whether `error` is PgBouncer refusing a query it never forwarded (see {@link PGBOUNCER_NOT_SENT}). */
function refusedByPgBouncer(state: string | undefined, error: unknown): boolean {
  if (state !== '08P01') return false
  const message = (error as { message?: unknown } | null)?.message
  return typeof message === 'string' && PGBOUNCER_NOT_SENT.some((text) => message.includes(text))
}

/**
 * SQLSTATEs meaning "the connection went away": the server shut down
 * (`57P01` also comes from `pg_terminate_backend`), crashed, or the link
 * failed. During a write nobody knows whether it committed.
 */
export function isConnectionLoss(state: string | undefined): boolean {
  return state === '57P01' || state === '57P02' || (state?.startsWith('08') ?? false)
}

/**
 * The contract error for a node-postgres failure during `failed.operation`,
 * built through core's `backendFailure`: this function is only the SQLSTATE
 * classification table. `failed.mayHaveApplied` says whether a statement that
 * changes data may have reached the server, which turns a lost connection
 * into `INDETERMINATE` instead of `UNAVAILABLE`.
 */
export function mapPostgresError(error: unknown, failed: FailedOperation): AgentStateError {
  if (isAgentStateError(error)) return error
  const { operation } = failed
  const state = sqlState(error)
  const context = { sqlState: state ?? null }
  const fail = (
    message: string,
    outcome: { mayHaveApplied: boolean; code?: BackendErrorCode; retryable?: boolean },
  ) => backendFailure({ operation, cause: error, context, message, ...outcome })
  if (state === 'XX001' || state === 'XX002') {
    return fail(`PostgreSQL reported damaged data (${state}) during ${operation}`, {
      mayHaveApplied: false,
      code: 'CORRUPT',
    })
  }
  if (state !== undefined && TRANSIENT.has(state)) {
    return fail(
      `PostgreSQL ${operation} did not run (${state}: ${reason(state)}); nothing was written`,
      { mayHaveApplied: false, retryable: true },
    )
  }
  if (refusedByPgBouncer(state, error)) {
    return fail(
      `PgBouncer could not reach PostgreSQL during ${operation} (${state}); nothing was sent`,
      { mayHaveApplied: false, retryable: true },
    )
  }
  if (state === undefined || isConnectionLoss(state)) {
    return failed.mayHaveApplied
      ? fail(
          `The PostgreSQL connection was lost during ${operation}; the write may or may not have been committed`,
          { mayHaveApplied: true, retryable: true },
        )
      : fail(`PostgreSQL is unreachable or dropped the connection during ${operation}`, {
          mayHaveApplied: false,
          retryable: true,
        })
  }
  // Privileges, a missing database, a failed login, a full disk…: the
  // statement was refused as a whole, so nothing happened.
  return fail(`PostgreSQL ${operation} failed (${state})`, {
    mayHaveApplied: false,
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
    `Row of key ${quoteForMessage(key)} is corrupt: ${problem}`,
    { context: { key, problem } },
  )
}
