import { connect } from 'node:net'
import {
  type Backend,
  isAgentStateError,
  type NativeQueue,
  type NativeQueueClaim,
  type NativeQueueClaimed,
} from '@agent-state/core'
import { type PgBouncer, startPgBouncer } from '@agent-state/test-services'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import type { WatcherHooks } from '../src/change-notification.js'
import { openPostgresBackend } from '../src/index.js'
import { createWithHooks, type PostgresBackendHooks } from '../src/postgres-backend.js'
import type { QueueStatements } from '../src/queue-statements.js'
import { createQueue, decode, event, KEYS, queueOf } from './queue-records.js'
import { APP_PASSWORD, APP_ROLE, startAppBehindPgBouncer } from './roles.js'

// A fast server restart under clients that talk to it through a real PgBouncer
// (transaction pooling), as the role owning only its schema.
const { server, bouncer } = await startAppBehindPgBouncer(4)

const open = (namespace: string): Promise<Backend> =>
  openPostgresBackend({
    connectionString: bouncer.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
    startupTimeouts: false,
    namespace,
    poolSize: 4,
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const bytes = (n: number) => new TextEncoder().encode(String(n))
const number = (value: Uint8Array | undefined) => Number(new TextDecoder().decode(value))

/** Whether PostgreSQL itself (not PgBouncer) refuses TCP connections: the server is down. */
function serverDown(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(server.port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(true))
  })
}

/** How an operation ended: `ok` or its contract code (anything else is kept whole). */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
    return 'ok'
  } catch (error) {
    return isAgentStateError(error) ? error.code : `unexpected: ${String(error)}`
  }
}

/** A write's failure with the SQLSTATE it was answered with (`null`: no answer, the connection died). */
async function answer(run: () => Promise<unknown>): Promise<{ code: string; sqlState: unknown }> {
  try {
    await run()
    return { code: 'ok', sqlState: null }
  } catch (error) {
    if (!isAgentStateError(error)) return { code: `unexpected: ${String(error)}`, sqlState: null }
    return { code: error.code, sqlState: error.context.sqlState ?? null }
  }
}

describe('a fast server restart behind PgBouncer', () => {
  it('gives UNAVAILABLE to calls PgBouncer refused while the server was down, INDETERMINATE only to writes whose connection died unanswered, then works on with data and fencing intact', async () => {
    const backend = await open('restart')
    const before = await backend.acquireLease('fenced', { holder: 'a', ttlMs: 200 })
    // Writes in a loop across the restart: each outcome is ok, INDETERMINATE (in flight when the
    // server went) or UNAVAILABLE (not sent); the stored value is then the last acknowledged
    // write or a later INDETERMINATE one.
    const acknowledged: number[] = []
    const indeterminate: number[] = []
    const loopCodes = new Set<string>()
    let running = true
    const loop = (async () => {
      for (let n = 1; running; n++) {
        const got = await outcome(() => backend.put('counter', bytes(n)))
        if (got === 'ok') acknowledged.push(n)
        else {
          loopCodes.add(got)
          if (got === 'INDETERMINATE') indeterminate.push(n)
          await sleep(20)
        }
      }
    })()
    while (acknowledged.length < 10) await sleep(10)
    const restarted = server.restart({ mode: 'fast', downMs: 1500 })
    // Calls made while PostgreSQL is down: nothing reached it, so every failure is UNAVAILABLE,
    // reads and writes alike (PgBouncer answers them itself).
    while (!(await serverDown())) await sleep(5)
    const reads = Promise.all([
      outcome(() => backend.get('counter')),
      outcome(() => backend.list({ prefix: '' })),
      outcome(() => backend.getLease('fenced')),
    ])
    const writes = Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        answer(() =>
          i % 2 === 0
            ? backend.put(`while-down/${i}`, bytes(i))
            : backend.acquireLease(`while-down/${i}`, { holder: 'b', ttlMs: 1000 }),
        ),
      ),
    )
    const down = { reads: await reads, writes: await writes }
    await restarted
    const acknowledgedBefore = acknowledged.length
    while (acknowledged.length < acknowledgedBefore + 10) await sleep(10)
    running = false
    await loop
    // Reads never changed anything: UNAVAILABLE. A write PgBouncer refused with an answer (its
    // 08P01 "server login has been failing") was never sent: UNAVAILABLE too. Only a write whose
    // pooled connection died without an answer (no SQLSTATE) cannot know: INDETERMINATE.
    expect(down.reads).toEqual(['UNAVAILABLE', 'UNAVAILABLE', 'UNAVAILABLE'])
    const answered = down.writes.filter((w) => w.sqlState !== null)
    expect(answered.length, JSON.stringify(down.writes)).toBeGreaterThan(0)
    for (const w of down.writes) {
      expect(w.code, JSON.stringify(w)).toBe(w.sqlState === null ? 'INDETERMINATE' : 'UNAVAILABLE')
    }
    expect(
      [...loopCodes].filter((code) => code !== 'INDETERMINATE' && code !== 'UNAVAILABLE'),
    ).toEqual([])
    // The restart was felt by the loop too.
    expect(loopCodes.size).toBeGreaterThan(0)
    // Nothing written while down landed; the counter holds what the outcomes allow.
    expect((await backend.list({ prefix: 'while-down/' })).entries).toEqual([])
    for (let i = 1; i < 6; i += 2) expect(await backend.getLease(`while-down/${i}`)).toBeNull()
    const stored = number((await backend.get('counter'))?.value)
    const last = acknowledged.at(-1) ?? 0
    expect([last, ...indeterminate.filter((n) => n > last)]).toContain(stored)
    await sleep(250)
    const after = await backend.acquireLease('fenced', { holder: 'b', ttlMs: 1000 })
    expect(after.token).toBeGreaterThan(before.token)
    await backend.close()
  }, 120_000)
})

/**
 * What a writer killed between its write's answer and its pipelined change
 * hint's leaves behind: a client of PgBouncer, in node-postgres pipeline mode
 * like the backend's, sends two statements at once (each with its own Sync),
 * reads the first answer and dies with the second (a 1 s sleep) still running.
 * PgBouncer 1.18 sees a server connection that is "ready" (the first Sync's
 * ReadyForQuery said idle), returns it to the pool with the second answer still
 * to come, and hands it to the next client, whose first statement receives the
 * dead client's answer, then its own, unexpected: node-postgres fails the
 * connection. (Later PgBouncer releases close such a server connection instead:
 * "client disconnected with query in progress".) A PgBouncer of one server
 * connection, so the next client gets that one.
 */
async function dieWithAnswerPending(
  through: PgBouncer,
  pending: readonly string[] = ["SELECT pg_sleep(1), 'the dead client''s answer'"],
): Promise<void> {
  const client = new pg.Client({
    connectionString: through.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
    pipeline: true,
    // The backend's own, as a killed writer's: with another one, PgBouncer would first send the
    // next client's `SET application_name` on that connection and take the foreign answer for its.
    application_name: 'agent-state',
  } as pg.ClientConfig)
  client.on('error', () => {})
  await client.connect()
  // The first statement runs a while, so the second surely reaches PgBouncer while the
  // connection is still linked and goes to the same server connection.
  const first = client.query('SELECT pg_sleep(0.1)')
  for (const text of pending) client.query(text).catch(() => {})
  await first
  ;(
    client as unknown as { connection: { stream: { destroy(): void } } }
  ).connection.stream.destroy()
  // Long enough for PgBouncer to see the end of the socket, well inside the sleep.
  await sleep(100)
}

describe('a client dying with a pipelined answer pending (PgBouncer 1.18 passes it on)', () => {
  const single = startPgBouncer(server, { users: { [APP_ROLE]: APP_PASSWORD }, poolSize: 1 })
  afterAll(async () => (await single).stop())

  /**
   * Creates a backend through that PgBouncer (on `schema`: a new one owned by
   * the role, not migrated) and runs its first operation right after the death.
   */
  async function firstOperationAfterDeath(
    hooks: PostgresBackendHooks,
    schema?: string,
  ): Promise<{ outcome: string; sqlState: unknown; attempts: number; found?: string }> {
    const through = await single
    if (schema !== undefined) await server.sql(`CREATE SCHEMA ${schema} AUTHORIZATION ${APP_ROLE}`)
    let attempts = 0
    const backend = createWithHooks(
      {
        connectionString: through.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
        startupTimeouts: false,
        namespace: 'after-death',
        poolSize: 2,
        ...(schema === undefined ? {} : { schema }),
      },
      {
        ...hooks,
        onOpenAttempt: () => {
          attempts++
        },
      },
    )
    try {
      await dieWithAnswerPending(through)
      const failure = await backend.get('k').then(
        () => undefined,
        (error: unknown) => error,
      )
      if (failure === undefined) return { outcome: 'ok', sqlState: null, attempts }
      if (!isAgentStateError(failure)) return { outcome: String(failure), sqlState: null, attempts }
      // What the open found: the first attempt's error, under the open's and the mapping's.
      let found: unknown = failure
      while (found instanceof Error && found.cause !== undefined) found = found.cause
      return {
        outcome: failure.code,
        sqlState: failure.context.sqlState ?? null,
        attempts,
        found: String((found as Error).message),
      }
    } finally {
      await backend.close()
    }
  }

  it("the next backend's open finds the foreign answer, retries on a fresh connection and succeeds", async () => {
    // Two attempts: the first one did get the dead client's server connection.
    const expected = { outcome: 'ok', sqlState: null, attempts: 2 }
    expect(await firstOperationAfterDeath({})).toEqual(expected)
    expect(await firstOperationAfterDeath({}, 'after_death')).toEqual(expected)
  }, 30_000)

  it('mutant: without the retry the first operation fails with UNAVAILABLE (the flake of the crash tier)', async () => {
    expect(await firstOperationAfterDeath({ openRetries: 0 }, 'after_death_no_retry')).toEqual({
      outcome: 'UNAVAILABLE',
      sqlState: null,
      attempts: 1,
      // Found by the check of the first read's answer, whatever came after it.
      found: expect.stringContaining('PostgreSQL answered another statement (columns pg_sleep, '),
    })
  }, 30_000)

  it('mutant: reads that believe any answer do not find it (the first read takes the foreign row)', async () => {
    // Without the check the open fails only once the dead client's answer is followed by its
    // own (node-postgres: not queryable) or the foreign row was believed ("the table exists":
    // 42P01): never with the check's finding, which the test above requires.
    const got = await firstOperationAfterDeath(
      { openRetries: 0, migration: { checkAnswers: false } },
      'after_death_believed',
    )
    expect(got.outcome).toBe('UNAVAILABLE')
    expect(got.found).not.toContain('answered another statement')
    expect([null, '42P01']).toContain(got.sqlState)
  }, 30_000)
})

describe("a client dying with a pipelined answer pending: an opened backend's statements check their answers", () => {
  const single = startPgBouncer(server, { users: { [APP_ROLE]: APP_PASSWORD }, poolSize: 1 })
  afterAll(async () => (await single).stop())

  /** How an operation ended: its result, or its code, retryability and deepest cause's message. */
  async function attempt<T>(
    run: () => Promise<T>,
  ): Promise<{ code: string; retryable?: boolean; found?: string; value?: T }> {
    try {
      return { code: 'ok', value: await run() }
    } catch (error) {
      if (!isAgentStateError(error)) return { code: `unexpected: ${String(error)}` }
      let found: unknown = error
      while (found instanceof Error && found.cause !== undefined) found = found.cause
      return {
        code: error.code,
        retryable: error.retryable,
        found: String((found as Error).message),
      }
    }
  }

  /** A failure found by the check of the answer's columns, as a lost connection (retryable). */
  const lostToForeignAnswer = (code: string) => ({
    code,
    retryable: true,
    found: expect.stringContaining('PostgreSQL answered another statement (columns pg_sleep, '),
  })

  /** Runs `run`, again after a lost connection (UNAVAILABLE, at most 3 times): any other failure fails. */
  async function untilAvailable<T>(run: () => Promise<T>) {
    for (let retry = 0; ; retry++) {
      const got = await attempt(run)
      if (got.code !== 'UNAVAILABLE' || retry === 3) return got
    }
  }

  /** Reads `k`, again after a lost connection (see {@link untilAvailable}). */
  const readBack = (backend: Backend) => untilAvailable(() => backend.get('k'))

  /** A backend through that PgBouncer (the next client after a death gets its one server connection). */
  async function throughSingle(namespace: string, hooks: PostgresBackendHooks) {
    const through = await single
    return createWithHooks(
      {
        connectionString: through.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
        startupTimeouts: false,
        namespace,
        poolSize: 2,
      },
      hooks,
    )
  }

  /**
   * A backend through that PgBouncer, opened and holding `k` = 1 (the first
   * write's meta), then a client dies with an answer pending: the backend's
   * next statement gets that server connection.
   */
  async function afterDeath(namespace: string, hooks: PostgresBackendHooks) {
    const backend = await throughSingle(namespace, hooks)
    const meta = await backend.put('k', bytes(1))
    await dieWithAnswerPending(await single)
    return { backend, meta }
  }

  it('the first get after the death is UNAVAILABLE (retryable, the answer is not its own), then reads the right value', async () => {
    const { backend } = await afterDeath('get-checked', {})
    try {
      const first = await attempt(() => backend.get('k'))
      expect(first).toEqual(lostToForeignAnswer('UNAVAILABLE'))
      const again = await readBack(backend)
      expect(again.code).toBe('ok')
      expect(number(again.value?.value)).toBe(1)
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('mutant: without the check the first get believes the foreign answer', async () => {
    const { backend } = await afterDeath('get-unchecked', { checkAnswers: false })
    try {
      const first = await attempt(() => backend.get('k'))
      expect(first.code).toBe('CORRUPT')
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('the first conditional write after the death is INDETERMINATE, and the store then holds one consistent state', async () => {
    const { backend, meta } = await afterDeath('put-checked', {})
    try {
      const first = await attempt(() => backend.put('k', bytes(2), { ifMatch: meta.version }))
      expect(first).toEqual(lostToForeignAnswer('INDETERMINATE'))
      const stored = await readBack(backend)
      expect(stored.code).toBe('ok')
      const { value, meta: now } = stored.value ?? { value: undefined, meta: meta }
      // Either the write applied (2, a new version) or it did not (1, the first write's meta).
      if (number(value) === 2) expect(now.version).not.toBe(meta.version)
      else expect({ value: number(value), meta: now }).toEqual({ value: 1, meta })
      // And the store goes on: a write conditional on what is stored succeeds.
      const next = await backend.put('k', bytes(3), { ifMatch: now.version })
      expect(number((await backend.get('k'))?.value)).toBe(3)
      expect((await backend.get('k'))?.meta.version).toBe(next.version)
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('mutant: without the check the first conditional write takes the foreign answer for its outcome (a false CORRUPT)', async () => {
    const { backend, meta } = await afterDeath('put-unchecked', { checkAnswers: false })
    try {
      // The foreign row has none of the write's columns: decoded as its snapshot, it is a
      // damaged row, for a write that was sent and may apply.
      const first = await attempt(() => backend.put('k', bytes(2), { ifMatch: meta.version }))
      expect(first.code).toBe('CORRUPT')
    } finally {
      await backend.close()
    }
  }, 30_000)

  /** A backend through that PgBouncer holding an empty queue. */
  async function withQueue(namespace: string, hooks: PostgresBackendHooks) {
    const backend = await throughSingle(namespace, hooks)
    await createQueue(backend)
    return { backend, queue: queueOf(backend) }
  }

  /** Runs `run` right after a client died, then again after each UNAVAILABLE (at most 3 times). */
  async function firstAfterDeathThenAgain<T>(run: () => Promise<T>) {
    await dieWithAnswerPending(await single)
    return { first: await attempt(run), again: await untilAvailable(run) }
  }

  const append = (queue: NativeQueue) => () =>
    queue.queueAppend(KEYS, { capacity: 10, mode: 'all', events: [event(7)] })
  const claim = (queue: NativeQueue, previous?: NativeQueueClaim['previous']) => () =>
    queue.queueClaim(KEYS, {
      holder: 'consumer',
      ttlMs: 30_000,
      claimedAt: '2026-12-03T00:00:00.000Z',
      ...(previous === undefined ? {} : { previous }),
    })

  it('an append and a claim right after the death are UNAVAILABLE (nothing sent to commit); sent again, the event is stored once and delivered once', async () => {
    const { backend, queue } = await withQueue('queue-checked', {})
    try {
      const appended = await firstAfterDeathThenAgain(append(queue))
      expect(appended.first).toEqual(lostToForeignAnswer('UNAVAILABLE'))
      // The failed append stored nothing: the one sent again gets sequence number 0.
      expect(appended.again).toEqual({ code: 'ok', value: { first: 0, stored: 1 } })
      const claimed = await firstAfterDeathThenAgain(claim(queue))
      expect(claimed.first).toEqual(lostToForeignAnswer('UNAVAILABLE'))
      // The failed claim took no lease (else this one were LEASE_HELD) and counted no attempt.
      expect(claimed.again.code).toBe('ok')
      const delivery = claimed.again.value as NativeQueueClaimed
      expect(decode(delivery.event)).toMatchObject({ seq: 0, event: 7 })
      expect(decode(delivery.head)).toMatchObject({ head: 0, attempts: 1 })
      // One event record, and once acknowledged the queue is empty: no event lost or doubled.
      const events = await backend.list({ prefix: KEYS.eventPrefix })
      expect(events.entries.map((entry) => entry.key)).toEqual([
        `${KEYS.eventPrefix}${'0'.padStart(16, '0')}`,
      ])
      const previous = { lease: delivery.lease, headVersion: delivery.headVersion, seq: 0 }
      expect(await claim(queue, previous)()).toBeNull()
      expect(decode((await backend.get(KEYS.tail))?.value)).toMatchObject({ next: 1 })
    } finally {
      await backend.close()
    }
  }, 30_000)

  /** How an append right after a client died ends, on a backend with `hooks` holding an empty queue. */
  async function appendAfterDeath(namespace: string, hooks: PostgresBackendHooks) {
    const { backend, queue } = await withQueue(namespace, hooks)
    try {
      await dieWithAnswerPending(await single)
      return await attempt(append(queue))
    } finally {
      await backend.close()
    }
  }

  it('mutant: with its statements undeclared, the append right after the death takes the foreign answers for its rows (a false CORRUPT)', async () => {
    // The lock's answer (one column, `key`) read as the load's rows: no row of a wanted key.
    expect(await appendAfterDeath('queue-undeclared', { queueStatements: undeclared })).toEqual({
      code: 'CORRUPT',
      retryable: false,
      found: expect.stringContaining('is missing or unreadable'),
    })
  }, 30_000)

  it('mutant: a transaction that failed before COMMIT was sent, reported as possibly applied, is INDETERMINATE', async () => {
    const hooks = { queueMayHaveApplied: 'always' } as const
    expect(await appendAfterDeath('queue-maybe-applied', hooks)).toEqual(
      lostToForeignAnswer('INDETERMINATE'),
    )
  }, 30_000)
})

describe("a client dying with answers pending, then a watch: the probe's connection is not reused", () => {
  const single = startPgBouncer(server, { users: { [APP_ROLE]: APP_PASSWORD }, poolSize: 1 })
  afterAll(async () => (await single).stop())

  /**
   * A backend of one pooled connection through that PgBouncer (LISTEN direct to the server)
   * holding `k` = 1. A client dies with two answers pending (a killed queue consumer leaves
   * several); then a watch starts, and a get is sent as soon as the watch's probe is: it waits
   * for the probe's connection. The probe takes the first foreign answer (and must not fail for
   * it); the second, then the probe's own, are still to come on that server connection. How the
   * get ends, and the watch's first hint.
   */
  async function getBehindProbe(hooks: WatcherHooks) {
    const through = await single
    const backend = createWithHooks(
      {
        connectionString: through.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
        listenConnectionString: server.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
        startupTimeouts: false,
        namespace: 'probe-after-death',
        poolSize: 1,
      },
      { watcher: hooks },
    )
    const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown }
    const query = prototype.query
    try {
      await backend.put('k', bytes(1))
      await dieWithAnswerPending(through, [
        "SELECT pg_sleep(1), 'the dead client''s answer'",
        "SELECT pg_sleep(0.3), 'its next answer'",
      ])
      let probeSent = () => {}
      const sent = new Promise<void>((resolve) => {
        probeSent = resolve
      })
      prototype.query = function (this: unknown, ...args: unknown[]) {
        const answer = query.apply(this, args)
        if (typeof args[0] === 'string' && args[0].includes('AS probe')) probeSent()
        return answer
      }
      const stream = backend.watch?.('')
      if (stream === undefined) throw new Error('the backend has no watch')
      const watch = stream[Symbol.asyncIterator]()
      const first = watch.next()
      await sent
      prototype.query = query
      const get = await backend.get('k').then(
        (entry) => ({ code: 'ok', value: number(entry?.value) }),
        (error: unknown) => ({
          code: isAgentStateError(error) ? error.code : String(error),
          found: String((error as Error).cause instanceof Error ? (error as Error).cause : ''),
        }),
      )
      const hint = (await first).value
      await watch.return?.()
      return { get, hint }
    } finally {
      prototype.query = query
      await backend.close()
    }
  }

  it('the probe keeps its connection until its own answer came, then discards it: the get behind it reads the right value, and the watch starts', async () => {
    expect(await getBehindProbe({})).toEqual({
      get: { code: 'ok', value: 1 },
      hint: { kind: 'resync' },
    })
  }, 30_000)

  it('mutant: a probe that gives its connection back at once passes the next foreign answer to the get (UNAVAILABLE)', async () => {
    expect(await getBehindProbe({ holdAfterForeignAnswer: false })).toEqual({
      get: {
        code: 'UNAVAILABLE',
        found: expect.stringContaining('PostgreSQL answered another statement (columns pg_sleep, '),
      },
      hint: { kind: 'resync' },
    })
  }, 30_000)
})

/** The same statements, each text changed by a comment: no longer the declared ones, unchecked. */
function undeclared(statements: QueueStatements): QueueStatements {
  const texts = Object.entries(statements).map(([name, text]) => [name, `${text} -- undeclared`])
  return Object.fromEntries(texts) as unknown as QueueStatements
}
