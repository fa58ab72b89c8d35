import { isAgentStateError } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { mapPostgresError } from '../src/errors.js'
import { createPostgresBackend, DEFAULT_SCHEMA, SCHEMA_VERSION } from '../src/index.js'
import { openWithHooks, type PostgresBackendHooks } from '../src/postgres-backend.js'
import { NOW_MS } from '../src/statements.js'

const server = await startPostgresServer()
afterAll(() => server.stop())

const open = (namespace: string, hooks: PostgresBackendHooks = {}, schema = DEFAULT_SCHEMA) =>
  openWithHooks({ connectionString: server.url, namespace, poolSize: 2, schema }, hooks)

/** Blocks the event loop until `ms` have passed (a holder stalled right before its write statement). */
function stall(ms: number): void {
  const until = Date.now() + ms
  while (Date.now() < until) {}
}

/**
 * A fenced put whose lease expires right before its one statement is sent:
 * only the expiry check inside the write statement, on the database clock,
 * can refuse it (the backend checks nothing before it writes).
 */
async function putAcrossExpiry(
  hooks: PostgresBackendHooks,
  schema = DEFAULT_SCHEMA,
): Promise<unknown> {
  let armed = false
  const backend = await open(
    `guard-${Math.random().toString(36).slice(2)}`,
    {
      ...hooks,
      beforeWrite: () => {
        if (armed) stall(400)
      },
    },
    schema,
  )
  try {
    const lease = await backend.acquireLease('k', { holder: 'a', ttlMs: 200 })
    armed = true
    return await backend.put('k', new Uint8Array([1]), { lease }).then(
      () => 'written',
      (error: unknown) => (isAgentStateError(error) ? error.code : error),
    )
  } finally {
    await backend.close()
  }
}

describe('the fenced write checks the lease in its own statement', () => {
  it('a lease that expires before the write statement runs is LEASE_LOST', async () => {
    expect(await putAcrossExpiry({})).toBe('LEASE_LOST')
  }, 30_000)

  it('mutant: without the guard in the write statement, the write lands after expiry', async () => {
    // The put function of a schema of its own, replaced by one whose token check
    // stays while the expiry check on the database clock goes.
    const schema = 'unguarded'
    await (await open('setup', {}, schema)).close()
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    try {
      const { rows } = await client.query<{ definition: string }>(
        `SELECT pg_get_functiondef('${schema}.agent_state_put'::regproc) AS definition`,
      )
      const definition = rows[0]?.definition ?? ''
      const mutant = definition.replaceAll(` AND t.lease_expires_at > ${NOW_MS}`, '')
      expect(mutant).not.toBe(definition)
      await client.query(mutant)
    } finally {
      await client.end()
    }
    expect(await putAcrossExpiry({}, schema)).toBe('written')
  }, 30_000)
})

/**
 * Rows the listing scans of `call` received (answers of the scan statement,
 * counted on the client by wrapping `pg.Client`'s `query`).
 */
async function scannedRows(call: () => Promise<unknown>): Promise<number> {
  const query = pg.Client.prototype.query
  let rows = 0
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    const answer = (query as (...a: unknown[]) => unknown).apply(this, args)
    const text = typeof args[0] === 'string' ? args[0] : ''
    if (text.startsWith('SELECT key, version, size, updated_at') && answer instanceof Promise) {
      answer.then(
        (result: pg.QueryResult) => {
          rows += result.rows.length
        },
        () => {},
      )
    }
    return answer
  } as typeof query
  try {
    await call()
  } finally {
    pg.Client.prototype.query = query
  }
  return rows
}

describe('a listing with a delimiter reads a big group in a small batch', () => {
  /** `a`, 1500 keys under `big/`, then 300 plain keys: the page and the rows it took. */
  async function listed(hooks: PostgresBackendHooks) {
    const backend = await open(`groups-${Math.random().toString(36).slice(2)}`, hooks)
    try {
      const value = new Uint8Array([1])
      await backend.put('a', value)
      for (let i = 0; i < 1500; i += 100) {
        await Promise.all(
          Array.from({ length: 100 }, (_, j) =>
            backend.put(`big/${String(i + j).padStart(4, '0')}`, value),
          ),
        )
      }
      for (let i = 0; i < 300; i += 100) {
        await Promise.all(
          Array.from({ length: 100 }, (_, j) =>
            backend.put(`z${String(i + j).padStart(3, '0')}`, value),
          ),
        )
      }
      let page: Awaited<ReturnType<typeof backend.list>> | undefined
      const rows = await scannedRows(async () => {
        page = await backend.list({ delimiter: '/' })
      })
      return { page, rows }
    } finally {
      await backend.close()
    }
  }

  it('the group costs one batch of 64 rows; the plain keys after it, growing batches', async () => {
    const { page, rows } = await listed({})
    expect(page?.prefixes).toEqual(['big/'])
    expect(page?.entries.map((entry) => entry.key)).toEqual([
      'a',
      ...Array.from({ length: 300 }, (_, i) => `z${String(i).padStart(3, '0')}`),
    ])
    // The first batch: a and 63 keys of big/ (64); then, after the group, each plain
    // key once, in batches of 64 and 256.
    expect(rows).toBe(64 + 300)
  }, 60_000)

  it("mutant: core's batch of 1000 reads the whole group's rows", async () => {
    const { page, rows } = await listed({ groupedFirstBatch: 1000 })
    expect(page?.prefixes).toEqual(['big/'])
    expect(rows).toBeGreaterThanOrEqual(1000)
  }, 60_000)
})

describe('per-value checksums', () => {
  it('a value changed behind the backend is CORRUPT, never a wrong read', async () => {
    const backend = await open('checksums')
    await backend.put('k', new TextEncoder().encode('hello'))
    await server.sql(
      "UPDATE agent_state.agent_state_entries SET value = 'jello'::bytea WHERE namespace = 'checksums'",
    )
    await expect(backend.get('k')).rejects.toMatchObject({ code: 'CORRUPT' })
    await server.sql(
      "UPDATE agent_state.agent_state_entries SET value = 'hello!'::bytea WHERE namespace = 'checksums'",
    )
    await expect(backend.get('k')).rejects.toMatchObject({
      code: 'CORRUPT',
      message: expect.stringMatching(/not its stored size/),
    })
    await backend.close()
  }, 30_000)
})

describe('a sync-created backend', () => {
  it('migrates before its first operation', async () => {
    await server.sql('DROP SCHEMA IF EXISTS lazy CASCADE')
    const backend = createPostgresBackend({ connectionString: server.url, schema: 'lazy' })
    expect(await backend.get('nothing')).toBeNull()
    expect((await server.sql('SELECT max(version) FROM lazy.agent_state_migrations')).trim()).toBe(
      String(SCHEMA_VERSION),
    )
    await backend.close()
  }, 30_000)
})

describe('error mapping (unit)', () => {
  const pgError = (code: string) => Object.assign(new Error('x'), { code })
  it.each([
    ['57P01', true, 'INDETERMINATE'],
    ['57P01', false, 'UNAVAILABLE'],
    ['08006', true, 'INDETERMINATE'],
    ['57014', true, 'UNAVAILABLE'],
    ['55P03', true, 'UNAVAILABLE'],
    ['XX001', false, 'CORRUPT'],
    ['42501', true, 'UNAVAILABLE'],
  ] as const)('SQLSTATE %s (writing %s) is %s', (code, writing, expected) => {
    expect(
      mapPostgresError(pgError(code), { operation: 'put', mayHaveApplied: writing }).code,
    ).toBe(expected)
  })
  it('08P01 is UNAVAILABLE when PgBouncer never sent the query, INDETERMINATE when its server connection died', () => {
    const pgbouncer = (message: string) => Object.assign(new Error(message), { code: '08P01' })
    for (const message of [
      'server login has been failing, try again later (server_login_retry)',
      'pgbouncer cannot connect to server',
      'query_wait_timeout',
      'no more connections allowed (max_client_conn)',
    ]) {
      expect(
        mapPostgresError(pgbouncer(message), { operation: 'put', mayHaveApplied: true }).code,
        message,
      ).toBe('UNAVAILABLE')
    }
    expect(
      mapPostgresError(pgbouncer('server conn crashed?'), {
        operation: 'put',
        mayHaveApplied: true,
      }).code,
    ).toBe('INDETERMINATE')
  })
  it('a lost connection without SQLSTATE is INDETERMINATE for a write, UNAVAILABLE for a read', () => {
    const lost = new Error('Connection terminated unexpectedly')
    expect(mapPostgresError(lost, { operation: 'put', mayHaveApplied: true }).code).toBe(
      'INDETERMINATE',
    )
    expect(mapPostgresError(lost, { operation: 'get', mayHaveApplied: false }).code).toBe(
      'UNAVAILABLE',
    )
  })
})

/**
 * A backend of one connection, busy with a put that waits on a row lock held
 * by another session, and four gets queued behind it when `close()` is
 * called: the gets' codes (before the lock is let go), and how the put and
 * the close end (after).
 */
async function getsQueuedAtClose(hooks: PostgresBackendHooks) {
  const namespace = `closing-${Math.random().toString(36).slice(2)}`
  const backend = await openWithHooks(
    {
      connectionString: server.url,
      namespace,
      poolSize: 1,
      lockTimeoutMs: 30_000,
      connectTimeoutMs: 2000,
    },
    hooks,
  )
  const codeOf = (call: Promise<unknown>) =>
    call.then(
      () => 'resolved',
      (error: unknown) => (isAgentStateError(error) ? error.code : String(error)),
    )
  await backend.put('k', new Uint8Array([1]))
  const locker = new pg.Client({ connectionString: server.url })
  await locker.connect()
  try {
    await locker.query('BEGIN')
    await locker.query(
      `SELECT 1 FROM ${DEFAULT_SCHEMA}.agent_state_entries WHERE namespace = $1 AND key = $2 FOR UPDATE`,
      [namespace, 'k'],
    )
    const put = codeOf(backend.put('k', new Uint8Array([2])))
    // The put holds the one connection once it waits on the lock.
    for (;;) {
      const waiting = await server.sql(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'agent-state'",
      )
      if (waiting.trim() === '1') break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const gets = Array.from({ length: 4 }, () => codeOf(backend.get('k')))
    const closed = codeOf(backend.close())
    const queued = await Promise.all(gets)
    await locker.query('COMMIT')
    return { queued, put: await put, close: await closed }
  } finally {
    await locker.end()
  }
}

describe('close() while operations wait for a connection', () => {
  it('ends their waits as CLOSED at once; the statement in flight finishes', async () => {
    expect(await getsQueuedAtClose({})).toEqual({
      queued: ['CLOSED', 'CLOSED', 'CLOSED', 'CLOSED'],
      put: 'resolved',
      close: 'resolved',
    })
  }, 30_000)

  it("mutant: left to pg-pool's queue, they wait out connectTimeoutMs and fail UNAVAILABLE", async () => {
    expect(await getsQueuedAtClose({ errorMapping: { waitsPastClose: true } })).toEqual({
      queued: ['UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE'],
      put: 'resolved',
      close: 'resolved',
    })
  }, 30_000)
})
