import {
  AgentStateError,
  type BackendErrorCode,
  backendFailure,
  type FailedOperation,
  isAgentStateError,
  quoteForMessage,
} from '@agent-state/core'
import { ForeignAnswerError } from './answer-check.js'

/**
 * Maps node-postgres errors to contract codes. Raw errors never escape; they
 * stay as `cause`. Messages name the operation and the SQLSTATE, never the
 * connection string (it may hold a password): `connection.ts` names the
 * server by host, port, database and user only.
 */

/**
 * The SQLSTATE of a PostgreSQL error (`"40001"`), if the server sent one.
 * Node's system errors also put a code of five capitals in `code` (`EPIPE`,
 * `EPERM`): every one starts with `E`, which no SQLSTATE class does, and they
 * name their `syscall`.
 */
export function sqlState(error: unknown): string | undefined {
  const { code, syscall } = (error ?? {}) as { code?: unknown; syscall?: unknown }
  if (typeof code !== 'string' || syscall !== undefined) return undefined
  return /^[0-9A-DF-Z][0-9A-Z]{4}$/.test(code) ? code : undefined
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
 * Node's error codes (`net`, `dns`, and `tls` over a socket) for a server
 * that could not be reached or a connection that died: refused, reset, a
 * broken pipe, a TCP timeout, a name that did not resolve, a socket used
 * after it closed. node-postgres passes them on unchanged, with no SQLSTATE.
 */
const CONNECTION_ERROR_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'EADDRNOTAVAIL',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ERR_SOCKET_CLOSED',
  'ERR_SOCKET_CONNECTION_TIMEOUT',
  'ERR_STREAM_DESTROYED',
  'ERR_STREAM_WRITE_AFTER_END',
])

/**
 * node-postgres 8.x's (`pg` client.js) and pg-pool 3.x's own errors for a
 * connection that ended, timed out or could not be had, word for word: they
 * carry no code, only these messages.
 */
export const CONNECTION_ERROR_MESSAGES: ReadonlySet<string> = new Set([
  // The socket closed: by the server or the network ("unexpectedly"), or while
  // the client was being ended (a connection discarded, the pool closing).
  'Connection terminated unexpectedly',
  'Connection terminated',
  // `connectionTimeoutMillis`: pg-pool's wrapper, the client's own, and no pooled
  // client free within it.
  'Connection terminated due to connection timeout',
  'timeout expired',
  'timeout exceeded when trying to connect',
  // `query_timeout`: no answer in time (in pipeline mode the socket is destroyed too).
  'Query read timeout',
  // A statement sent on a client that already failed or was ended.
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
])

/**
 * Prefixes of node-postgres' protocol errors: a message that no statement was
 * waiting for (`Received unexpected rowDescription message from backend.`,
 * a pooler passing an answer on, see answer-check.ts) or bytes that are no
 * message; pg then fails every statement on the connection.
 */
const PROTOCOL_ERROR_PREFIXES = ['Received unexpected ', 'received invalid response: ']

/**
 * Whether `error` (one without a SQLSTATE) is a lost or unreachable
 * connection: a Node socket error, one of node-postgres' connection errors, a
 * protocol error, or a foreign answer (answer-check.ts). Anything else thrown
 * inside a body is not: see {@link mapPostgresError}.
 */
export function isConnectionFailure(error: unknown): boolean {
  if (error instanceof ForeignAnswerError) return true
  if (!(error instanceof Error)) return false
  const { code, syscall } = error as { code?: unknown; syscall?: unknown }
  if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return true
  // A unix socket path with no server behind it (the server is down).
  if (code === 'ENOENT' && syscall === 'connect') return true
  const { message } = error
  return (
    CONNECTION_ERROR_MESSAGES.has(message) ||
    PROTOCOL_ERROR_PREFIXES.some((prefix) => message.startsWith(prefix))
  )
}

/**
 * Whether `error` is TLS refused or failing to set up: the server has no TLS
 * (node-postgres' two messages), or Node's `tls` rejected the certificate or
 * the handshake (its `ERR_TLS_*`/`ERR_SSL_*` codes and OpenSSL's verification
 * codes). A configuration error: retrying cannot help.
 */
function isTlsFailure(error: unknown): boolean {
  if (!(error instanceof Error)) return false
  if (
    error.message === 'The server does not support SSL connections' ||
    error.message === 'There was an error establishing an SSL connection'
  ) {
    return true
  }
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && /^(ERR_TLS_|ERR_SSL_)|CERT|SELF_SIGNED|UNABLE_TO_/.test(code)
}

/** Test mutants of {@link mapPostgresError}; never set in production. */
export interface ErrorMappingMutants {
  /**
   * `true`: every error without a SQLSTATE is a lost connection, a bug in a
   * body included (`UNAVAILABLE` or `INDETERMINATE`, retryable): the mapping
   * before the unexpected errors were told apart.
   */
  readonly unexpectedAsLost?: boolean
  /**
   * `true`: any code of five capitals or digits is a SQLSTATE, Node's `EPIPE`
   * included (then a refused statement: `UNAVAILABLE`, not retryable, for a
   * write that may have landed): the test before Node's codes were told apart.
   */
  readonly nodeCodesAsSqlState?: boolean
  /**
   * `true`: an operation waiting for a pooled connection when the backend is
   * closed keeps waiting on pg-pool, which never hands it one, until
   * `connectTimeoutMs` ends it as `UNAVAILABLE` (retryable): the behaviour
   * before `close()` ended those waits as `CLOSED`.
   */
  readonly waitsPastClose?: boolean
}

/**
 * The contract error for a node-postgres failure during `failed.operation`,
 * built through core's `backendFailure`: this function is only the
 * classification table. `failed.mayHaveApplied` says whether a statement that
 * changes data may have reached the server, which turns a lost connection
 * into `INDETERMINATE` instead of `UNAVAILABLE`. An error without a SQLSTATE
 * is a lost connection (retryable) only when {@link isConnectionFailure}
 * recognises it; TLS that cannot be set up is `UNAVAILABLE`, not retryable;
 * anything else (a bug) is `UNAVAILABLE` or `INDETERMINATE` as
 * `mayHaveApplied` says, never retryable, its cause kept.
 */
export function mapPostgresError(
  error: unknown,
  failed: FailedOperation,
  mutants: ErrorMappingMutants = {},
): AgentStateError {
  if (isAgentStateError(error)) return error
  const { operation } = failed
  const code = (error as { code?: unknown } | null)?.code
  const state =
    mutants.nodeCodesAsSqlState === true && typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)
      ? code
      : sqlState(error)
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
  const lost =
    state === undefined && (mutants.unexpectedAsLost === true || isConnectionFailure(error))
  if (isConnectionLoss(state) || lost) {
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
  if (state === undefined && isTlsFailure(error)) {
    return fail(
      `TLS to PostgreSQL could not be set up during ${operation} (check sslmode and the certificates)`,
      { mayHaveApplied: false, retryable: false },
    )
  }
  if (state === undefined) {
    // Neither PostgreSQL's error nor a lost connection: an error thrown by our own code
    // inside a body (a decoding bug, a TypeError) or by a driver in a way we do not know.
    // Never retryable (a bug comes back at each try, and a caller told to retry would hide
    // it), its cause kept whole for the report. Whether the write took effect is what
    // `mayHaveApplied` says: a body may throw after its write statement was answered.
    // `connection.ts` still discards the connection: its state is unknown.
    const name = error instanceof Error ? error.name : typeof error
    return fail(
      `PostgreSQL ${operation} failed with an unexpected ${name}, neither a PostgreSQL error nor a lost connection (a bug of agent-state or of the driver: see its cause)${failed.mayHaveApplied ? '; the write may or may not have been committed' : ''}`,
      { mayHaveApplied: failed.mayHaveApplied, retryable: false },
    )
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
