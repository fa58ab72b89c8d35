import { AgentStateError, isAgentStateError } from '@agent-state/core'
import pg from 'pg'
import { checkAnswersOn } from './answer-check.js'
import { type ErrorMappingMutants, isConnectionLoss, mapPostgresError, sqlState } from './errors.js'
import type { ResolvedPostgresOptions } from './options.js'

/**
 * The pool of connections. No session state is ever set on a connection
 * (no `SET`, no prepared statement by name, no session advisory lock, no
 * `LISTEN`), so any server connection can serve any statement: PgBouncer in
 * transaction-pooling mode may hand each statement to another one.
 */
export interface Connection {
  /**
   * Runs `body` on a pooled client; maps every error (`writing`: see
   * `mapPostgresError`'s `mayHaveApplied`; a function is asked once `body`
   * failed, for a body whose later statements write and earlier ones do not).
   * An error `body` throws that is neither PostgreSQL's nor a lost connection
   * (a bug) is never retryable, and its connection is discarded. `body` may
   * call `discard` to have its connection closed instead of given back to the
   * pool although it succeeds (the watcher's probe after a foreign answer).
   */
  use<T>(operation: string, writing: Writing, body: Body<T>): Promise<T>
  /**
   * As {@link Connection.use}, on a connection of its own outside the pool
   * (a pool of one, opened when first used): the lane of the change-hint
   * batches (hint-batch.ts), one statement at a time, which never wait
   * behind the writes queued for the pool.
   */
  useLane<T>(operation: string, writing: Writing, body: Body<T>): Promise<T>
  /** `host:port/database as user`, for messages: never the password. */
  readonly server: string
  end(): Promise<void>
}

/** What runs on a checked-out client (see {@link Connection.use}). */
export type Body<T> = (client: pg.PoolClient, discard: () => void) => Promise<T>

/** Whether a failed body may have changed data: fixed, or asked once it failed. */
export type Writing = boolean | (() => boolean)

/**
 * The server as messages show it. Parsed leniently: a URL that `URL` cannot
 * read (pg accepts some) is named only as "the configured server".
 */
export function describeServer(connectionString: string): string {
  try {
    const url = new URL(connectionString)
    const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || '(default database)'
    const user = url.username === '' ? '' : ` as ${decodeURIComponent(url.username)}`
    return `${url.hostname || 'localhost'}:${url.port || '5432'}/${database}${user}`
  } catch {
    return 'the configured server'
  }
}

/**
 * Opens the pool (lazily: no connection is made before the first statement).
 * Every connection checks that each declared statement's answer is its own
 * (answer-check.ts); `checkAnswers: false` and `mutants` are test mutants.
 */
export function openConnection(
  options: ResolvedPostgresOptions,
  checkAnswers = true,
  mutants: ErrorMappingMutants = {},
): Connection {
  const server = describeServer(options.connectionString)
  const config: pg.PoolConfig = {
    connectionString: options.connectionString,
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    application_name: 'agent-state',
    // The client gives up a little after the server would have cancelled the
    // statement, so a dead server that never answers is noticed too.
    query_timeout: options.statementTimeoutMs + 2000,
    // Queries queued on a client go to the server without waiting for the previous
    // one's answer (each with its own Sync, so each its own transaction): a write's
    // change hint follows it in the same round trip (see `store` in postgres-backend.ts).
    pipeline: true,
  }
  if (options.ssl !== undefined) config.ssl = options.ssl as pg.PoolConfig['ssl']
  if (options.startupTimeouts) {
    config.statement_timeout = options.statementTimeoutMs
    config.lock_timeout = options.lockTimeoutMs
    config.idle_in_transaction_session_timeout = options.idleInTransactionTimeoutMs
  }
  const pool = openPool(config, checkAnswers)
  const lane = openPool({ ...config, max: 1 }, checkAnswers)
  const closing = closeGuard(mutants)
  const checkout = (from: pg.Pool) => (operation: string) => closing.connect(from, operation)
  return {
    server,
    use: (operation, writing, body) =>
      useOn(checkout(pool), server, mutants, operation, writing, body),
    useLane: (operation, writing, body) =>
      useOn(checkout(lane), server, mutants, operation, writing, body),
    end: async () => {
      closing.close()
      await Promise.all([pool.end(), lane.end()])
    },
  }
}

/**
 * Ends the waits for a pooled connection at `close()`. pg-pool's `end()` never
 * serves its queued checkouts and never fails them: each would wait until
 * `connectTimeoutMs` and then fail as a lost connection (`UNAVAILABLE`,
 * retryable), though the only true answer is that the backend was closed. A
 * connection handed out after `close()` goes straight back (the ending pool
 * closes it).
 */
function closeGuard(mutants: ErrorMappingMutants) {
  let closed = false
  const waiting = new Set<() => void>()
  const closedError = (operation: string) =>
    new AgentStateError('CLOSED', `The postgres backend was closed before ${operation} could run`)
  return {
    connect(pool: pg.Pool, operation: string): Promise<pg.PoolClient> {
      if (closed) return Promise.reject(closedError(operation))
      if (mutants.waitsPastClose === true) return pool.connect()
      return new Promise((resolve, reject) => {
        let settled = false
        const abandon = () => {
          if (settled) return
          settled = true
          waiting.delete(abandon)
          reject(closedError(operation))
        }
        waiting.add(abandon)
        pool.connect().then(
          (client) => {
            if (settled) {
              client.release()
              return
            }
            settled = true
            waiting.delete(abandon)
            resolve(client)
          },
          (error: unknown) => {
            if (settled) return
            settled = true
            waiting.delete(abandon)
            reject(closed ? closedError(operation) : error)
          },
        )
      })
    },
    close(): void {
      closed = true
      for (const abandon of [...waiting]) abandon()
    },
  }
}

/** A pool whose connections' errors never crash the process (and whose answers are checked). */
function openPool(config: pg.PoolConfig, checkAnswers: boolean): pg.Pool {
  const pool = new pg.Pool(config)
  // An idle connection the server dropped (restart, pg_terminate_backend)
  // reports here; the pool discards it. Without a listener it would crash the process.
  pool.on('error', () => {})
  // And every client keeps a listener of its own for good: pg emits 'error' on a client for a
  // server message that arrives while no query is active, and an 'error' with no listener is
  // thrown from the socket's data handler, killing the process. The pool's idle listener and
  // `use`'s own cover the usual moments; a `pg_terminate_backend` storm once hit a client
  // outside both (faults.test.ts, one unhandled 57P01 in a clean run). The statement in flight,
  // if any, still gets its error, and `use` still retires a broken connection.
  pool.on('connect', (client) => {
    client.on('error', () => {})
    if (checkAnswers) checkAnswersOn(client)
  })
  return pool
}

/** Runs `body` on a client from `checkout` (see {@link Connection.use}). */
async function useOn<T>(
  checkout: (operation: string) => Promise<pg.PoolClient>,
  server: string,
  mutants: ErrorMappingMutants,
  operation: string,
  writing: Writing,
  body: Body<T>,
): Promise<T> {
  let client: pg.PoolClient
  try {
    client = await checkout(operation)
  } catch (error) {
    if (isAgentStateError(error)) throw error
    const mapped = mapPostgresError(error, { operation, mayHaveApplied: false }, mutants)
    throw new AgentStateError(mapped.code, `${mapped.message} (server ${server})`, {
      context: { ...mapped.context, server },
      cause: error,
      retryable: mapped.retryable,
    })
  }
  let broken: Error | undefined
  // The connection may die while checked out (pg_terminate_backend, a
  // restart): pg then emits 'error' on the client, which would crash the
  // process unhandled. The statement in flight gets its own error.
  const onError = (error: Error) => {
    broken = error
  }
  client.on('error', onError)
  const discard = () => {
    broken ??= new Error(`${operation}: connection discarded by its caller`)
  }
  try {
    return await body(client, discard)
  } catch (error) {
    // Never hand the connection out again unless it is known to be sound: PostgreSQL
    // answered with an error of the statement (a SQLSTATE other than the server ending the
    // session, 57P01 `pg_terminate_backend`…), or the body refused with a contract error
    // (core's rules: LEASE_HELD, CORRUPT…) after its statements were answered. A lost
    // connection (its 'end' may not have arrived yet: the next checkout would get a dead
    // one) and anything else without a SQLSTATE (our own TypeError, an error we do not know:
    // a statement may still be in flight, a transaction still open) are discarded. When in
    // doubt, discard: that costs one reconnect, a reused broken connection a wrong answer.
    const state = sqlState(error)
    if ((state === undefined || isConnectionLoss(state)) && !isAgentStateError(error)) {
      broken = error instanceof Error ? error : new Error(`${operation} threw ${typeof error}`)
    }
    const mayHaveApplied = typeof writing === 'function' ? writing() : writing
    throw mapPostgresError(error, { operation, mayHaveApplied }, mutants)
  } finally {
    client.off('error', onError)
    client.release(broken)
  }
}
