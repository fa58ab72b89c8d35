import { AgentStateError, isAgentStateError } from '@agent-state/core'
import pg from 'pg'
import { isConnectionLoss, mapPostgresError, sqlState } from './errors.js'
import type { ResolvedPostgresOptions } from './options.js'

/**
 * The pool of connections. No session state is ever set on a connection
 * (no `SET`, no prepared statement by name, no session advisory lock, no
 * `LISTEN`), so any server connection can serve any statement: PgBouncer in
 * transaction-pooling mode may hand each statement to another one.
 */
export interface Connection {
  /** Runs `body` on a pooled client; maps every error (`writing`: see `mapPostgresError`). */
  use<T>(
    operation: string,
    writing: boolean,
    body: (client: pg.PoolClient) => Promise<T>,
  ): Promise<T>
  /** `host:port/database as user`, for messages: never the password. */
  readonly server: string
  end(): Promise<void>
}

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

/** Opens the pool (lazily: no connection is made before the first statement). */
export function openConnection(options: ResolvedPostgresOptions): Connection {
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
  })

  return {
    server,
    async use(operation, writing, body) {
      let client: pg.PoolClient
      try {
        client = await pool.connect()
      } catch (error) {
        const mapped = mapPostgresError(error, { operation, mayHaveApplied: false })
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
      try {
        return await body(client)
      } catch (error) {
        // A connection-level failure (no SQLSTATE, or the server ending the session: 57P01
        // `pg_terminate_backend`…): never hand that connection out again, even if its 'end'
        // has not arrived yet (the next checkout would get a dead connection).
        const state = sqlState(error)
        if (
          (state === undefined || isConnectionLoss(state)) &&
          !isAgentStateError(error) &&
          error instanceof Error
        ) {
          broken = error
        }
        throw mapPostgresError(error, { operation, mayHaveApplied: writing })
      } finally {
        client.off('error', onError)
        client.release(broken)
      }
    },
    end: () => pool.end(),
  }
}
