import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { isAgentStateError } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import type pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { ForeignAnswerError } from '../src/answer-check.js'
import { openConnection, type Writing } from '../src/connection.js'
import {
  CONNECTION_ERROR_MESSAGES,
  type ErrorMappingMutants,
  mapPostgresError,
} from '../src/errors.js'
import { postgresOptionsSchema } from '../src/options.js'

// A lost connection is retryable (UNAVAILABLE, or INDETERMINATE for a write that was sent);
// anything else without a SQLSTATE, our own TypeError above all, is never retryable.

/** What a caller sees of a failure: its code, retryability and cause. */
function seen(error: unknown): { code: string; retryable: boolean; cause: unknown } {
  if (!isAgentStateError(error))
    return { code: `not mapped: ${String(error)}`, retryable: false, cause: error }
  return { code: error.code, retryable: error.retryable, cause: error.cause }
}

const read = { operation: 'get', mayHaveApplied: false }
const write = { operation: 'put', mayHaveApplied: true }

/** How `error` is seen for a write that was sent and for a read. */
const asWriteAndRead = (error: unknown, mutants?: ErrorMappingMutants) => ({
  write: seen(mapPostgresError(error, write, mutants)),
  read: seen(mapPostgresError(error, read, mutants)),
})

/** `INDETERMINATE` for the write, `UNAVAILABLE` for the read, both `retryable`, `cause` kept. */
const writeAndRead = (retryable: boolean, cause: unknown) => ({
  write: { code: 'INDETERMINATE', retryable, cause },
  read: { code: 'UNAVAILABLE', retryable, cause },
})

/** An error as Node's `net` raises it: a message, a code and the system call. */
const socketError = (code: string, syscall: string) =>
  Object.assign(new Error(`${syscall} ${code} 127.0.0.1:5432`), { code, errno: -1, syscall })

/** Node's socket errors of a lost or unreachable server, with the system call that raises each. */
const SOCKET_ERRORS = {
  ECONNRESET: 'read',
  EPIPE: 'write',
  ETIMEDOUT: 'read',
  ECONNREFUSED: 'connect',
  EHOSTUNREACH: 'connect',
  ENOTFOUND: 'getaddrinfo',
}

describe('error mapping without a SQLSTATE (unit, the exact errors)', () => {
  const lost: [string, Error][] = [
    ...[...CONNECTION_ERROR_MESSAGES].map((message): [string, Error] => [
      message,
      new Error(message),
    ]),
    // With the system call Node names: EPIPE's five capitals once passed for a SQLSTATE
    // (then "PostgreSQL put failed (EPIPE)": UNAVAILABLE, a write that may have landed).
    ...Object.entries(SOCKET_ERRORS).map(([code, syscall]): [string, Error] => [
      code,
      socketError(code, syscall),
    ]),
    ['ENOENT on connect (a unix socket without a server)', socketError('ENOENT', 'connect')],
    ['a protocol error', new Error('Received unexpected rowDescription message from backend.')],
    ['an invalid message', new Error('received invalid response: 58')],
    ['a foreign answer', new ForeignAnswerError('PostgreSQL answered another statement')],
  ]
  it.each(lost)(
    '%s is a lost connection: INDETERMINATE for a write, UNAVAILABLE for a read, both retryable',
    (_, error) => {
      expect(asWriteAndRead(error)).toEqual(writeAndRead(true, error))
    },
  )

  it('a TypeError of our own code is not retryable, its cause kept: INDETERMINATE for a write, UNAVAILABLE for a read', () => {
    const bug = new TypeError("Cannot read properties of undefined (reading 'length')")
    expect(asWriteAndRead(bug)).toEqual(writeAndRead(false, bug))
    expect(mapPostgresError(bug, read).message).toMatch(
      /unexpected TypeError, neither a PostgreSQL error nor a lost connection/,
    )
    // Other errors a connection does not raise: ENOENT of a file, a thrown string.
    for (const other of [
      socketError('ENOENT', 'open'),
      'a string',
      new RangeError('Invalid array length'),
    ]) {
      expect(seen(mapPostgresError(other, read)), String(other)).toEqual({
        code: 'UNAVAILABLE',
        retryable: false,
        cause: other,
      })
    }
  })

  it('TLS that cannot be set up is UNAVAILABLE, not retryable', () => {
    for (const error of [
      new Error('The server does not support SSL connections'),
      Object.assign(new Error('self-signed certificate'), { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }),
      Object.assign(new Error('Hostname/IP does not match'), {
        code: 'ERR_TLS_CERT_ALTNAME_INVALID',
      }),
    ]) {
      expect(seen(mapPostgresError(error, read)), error.message).toEqual({
        code: 'UNAVAILABLE',
        retryable: false,
        cause: error,
      })
    }
  })

  it('mutant: every error without a SQLSTATE as a lost connection makes the TypeError and a TLS refusal retryable', () => {
    const bug = new TypeError('a decoding bug')
    expect(asWriteAndRead(bug, { unexpectedAsLost: true })).toEqual(writeAndRead(true, bug))
    // And TLS that cannot be set up, a configuration error, retryable too.
    const tls = new Error('The server does not support SSL connections')
    expect(seen(mapPostgresError(tls, read, { unexpectedAsLost: true }))).toEqual({
      code: 'UNAVAILABLE',
      retryable: true,
      cause: tls,
    })
  })

  it("mutant: Node's codes taken for SQLSTATEs make EPIPE on a write a refused statement (UNAVAILABLE, not retryable)", () => {
    const epipe = socketError('EPIPE', 'write')
    expect(seen(mapPostgresError(epipe, write, { nodeCodesAsSqlState: true }))).toEqual({
      code: 'UNAVAILABLE',
      retryable: false,
      cause: epipe,
    })
  })

  it('every message taken for a lost connection is one node-postgres 8.x or pg-pool 3.x raises, word for word', () => {
    // Read from the installed sources: a release that rewords one fails here, not in production.
    const require = createRequire(join(import.meta.dirname, '..', 'package.json'))
    const pgLib = dirname(require.resolve('pg'))
    const poolIndex = createRequire(require.resolve('pg')).resolve('pg-pool')
    const sources = [join(pgLib, 'client.js'), poolIndex]
      .map((file) => readFileSync(file, 'utf8'))
      .join('\n')
    const missing = (messages: Iterable<string>) =>
      [...messages].filter((m) => !sources.includes(`'${m}'`))
    expect(missing(CONNECTION_ERROR_MESSAGES)).toEqual([])
    // Mutant: a message pg never raises is found missing.
    expect(missing(['Connection lost'])).toEqual(['Connection lost'])
  })
})

describe('error mapping on a real PostgreSQL: what a body and a connection really raise', () => {
  const server = startPostgresServer()
  afterAll(async () => (await server).stop())

  /** A pool of one connection on the test server (so a discarded one is replaced, not reused). */
  async function pool(mutants: ErrorMappingMutants = {}, url?: string) {
    const options = postgresOptionsSchema.parse({
      connectionString: url ?? (await server).url,
      poolSize: 1,
      connectTimeoutMs: 2000,
    })
    return openConnection(options, true, mutants)
  }

  /** Runs `body` through `use` on a pool of one; the failure as seen, and whether its connection was reused. */
  async function failing(
    writing: Writing,
    body: (client: pg.PoolClient) => Promise<unknown>,
    mutants: ErrorMappingMutants = {},
  ) {
    const connection = await pool(mutants)
    try {
      let first: pg.PoolClient | undefined
      const failure = await connection
        .use('put', writing, async (client) => {
          first = client
          return body(client)
        })
        .then(() => undefined, seen)
      const next = await connection.use('get', false, async (client) => client)
      return { failure, reused: next === first }
    } finally {
      await connection.end()
    }
  }

  /** A lost connection as seen: `code`, retryable, node-postgres' error with `message` as cause. */
  const lostWith = (code: string, message: string) => ({
    code,
    retryable: true,
    cause: expect.objectContaining({ message }),
  })

  const decodingBug = async (client: pg.PoolClient) => {
    const answered = await client.query('SELECT 1 AS one')
    return (answered.rows[1] as { one: number }).one
  }

  it('a TypeError thrown inside a body after its statement was answered: INDETERMINATE, not retryable, the TypeError as cause, the connection discarded', async () => {
    const { failure, reused } = await failing(true, decodingBug)
    expect(failure).toEqual({
      code: 'INDETERMINATE',
      retryable: false,
      cause: expect.any(TypeError),
    })
    expect(reused).toBe(false)
  }, 30_000)

  it('mutant: with every error without a SQLSTATE a lost connection, the same bug is retryable', async () => {
    const { failure } = await failing(true, decodingBug, { unexpectedAsLost: true })
    expect(failure).toEqual({
      code: 'INDETERMINATE',
      retryable: true,
      cause: expect.any(TypeError),
    })
  }, 30_000)

  it("node-postgres' query read timeout: INDETERMINATE for a write, retryable, the connection discarded", async () => {
    const { failure, reused } = await failing(true, (client) =>
      client.query({ text: 'SELECT pg_sleep(1)', query_timeout: 50 } as pg.QueryConfig),
    )
    expect(failure).toEqual(lostWith('INDETERMINATE', 'Query read timeout'))
    expect(reused).toBe(false)
  }, 30_000)

  it('a socket that dies under a read: UNAVAILABLE, retryable ("Connection terminated unexpectedly")', async () => {
    const { failure, reused } = await failing(false, async (client) => {
      const pending = client.query('SELECT pg_sleep(1)')
      ;(
        client as unknown as { connection: { stream: { destroy(): void } } }
      ).connection.stream.destroy()
      return pending
    })
    expect(failure).toEqual(lostWith('UNAVAILABLE', 'Connection terminated unexpectedly'))
    expect(reused).toBe(false)
  }, 30_000)

  it('a refused connection (nothing listens on the port): UNAVAILABLE, retryable', async () => {
    const closed = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as { port: number }
        probe.close(() => resolve(port))
      })
    })
    const connection = await pool({}, `postgres://nobody:x@127.0.0.1:${closed}/postgres`)
    try {
      const failure = await connection
        .use('get', false, async () => 'connected')
        .then(() => undefined, seen)
      expect(failure).toEqual({
        code: 'UNAVAILABLE',
        retryable: true,
        cause: expect.objectContaining({ code: 'ECONNREFUSED' }),
      })
    } finally {
      await connection.end()
    }
  }, 30_000)
})
