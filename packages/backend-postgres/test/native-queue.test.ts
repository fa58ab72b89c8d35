/**
 * The native daemon queue (src/native-queue.ts) at the backend's level, on a
 * real server: 16 producers on 16 instances through a real PgBouncer in
 * transaction pooling (no session state) keep the capacity exact and take
 * each sequence number once (the transaction's row locks), and a consumer
 * stopped between its transaction's two round trips holds the queue's head
 * only as long as the transaction's own `idle_in_transaction_session_timeout`
 * (set with `set_config(…, true)`, so also where no startup parameter can
 * be sent), and whose operation, its `COMMIT` sent on a connection the
 * server ended, is `INDETERMINATE`. The runtime's queue suites prove the
 * rest of the path's semantics (packages/runtime/test,
 * `NATIVE_QUEUE_BACKENDS`). Each check has a mutant below: a lock statement
 * that locks nothing, a transaction that sets only its lock timeout, one
 * whose lost connection after `COMMIT` was sent is reported as not applied.
 */
import { type Backend, isAgentStateError, type NativeQueue } from '@agent-state/core'
import pg from 'pg'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { PostgresBackendOptions } from '../src/options.js'
import type { PostgresBackendHooks } from '../src/postgres-backend.js'
import type * as QueueStatementsModule from '../src/queue-statements.js'
import { createQueue, decode, event, KEYS } from './queue-records.js'
import { APP_PASSWORD, APP_ROLE, startAppBehindPgBouncer } from './roles.js'

const { server, bouncer } = await startAppBehindPgBouncer(8)

type Create = (options: PostgresBackendOptions) => Backend
let namespaces = 0
const opened: Backend[] = []
afterEach(async () => {
  await Promise.all(opened.splice(0).map((backend) => backend.close()))
  vi.doUnmock('../src/queue-statements.js')
  vi.resetModules()
})

/** `createPostgresBackend` (with test `hooks`), imported afresh (after a mutant's `vi.doMock`). */
async function importCreate(hooks: PostgresBackendHooks = {}): Promise<Create> {
  const { createWithHooks } = await import('../src/postgres-backend.js')
  return (options) => {
    const backend = createWithHooks(options, hooks)
    opened.push(backend)
    return backend
  }
}

/**
 * 16 appends of one event each from 16 instances through PgBouncer (each its
 * own connection), against a queue of capacity 12: the distinct sequence
 * numbers stored, how many appends were refused, the tail's next number and
 * the event of each stored number.
 */
async function sixteenProducers(create: Create) {
  const namespace = `producers-${++namespaces}`
  const url = bouncer.urlFor(APP_ROLE, APP_PASSWORD, 'postgres', 'startupTimeouts=false')
  const instances = Array.from({ length: 16 }, () =>
    create({ connectionString: url, namespace, poolSize: 1, startupTimeouts: false }),
  )
  const first = instances[0] as Backend
  await createQueue(first)
  await Promise.all(instances.map((backend) => backend.head('warm')))
  const appended = await Promise.all(
    instances.map((backend, i) =>
      (backend.nativeQueue as NativeQueue).queueAppend(KEYS, {
        capacity: 12,
        mode: 'all',
        events: [event(i)],
      }),
    ),
  )
  const stored = appended.filter((a) => a.stored === 1).map((a) => a.first)
  const events = new Set<number>()
  for (const seq of stored) {
    const found = await first.get(`${KEYS.eventPrefix}${String(seq).padStart(16, '0')}`)
    events.add(decode(found?.value).event)
  }
  return {
    sequences: [...new Set(stored)].sort((a, b) => a - b),
    refused: appended.filter((a) => a.stored === 0).length,
    next: decode((await first.get(KEYS.tail))?.value).next,
    distinctEvents: events.size,
  }
}

/** What the real backend gives: 0..11 once each, 4 refused, 12 different events stored. */
const EXACT = {
  sequences: Array.from({ length: 12 }, (_, i) => i),
  refused: 4,
  next: 12,
  distinctEvents: 12,
}

/** The `load` statement's text (see queue-statements.ts), to stall a consumer right after it. */
const LOAD_MARK = 'AS wanted, n.now_ms'

/**
 * Consumer A's claim stalls between its two round trips (its reads answered,
 * its writes never sent until B is done: a client stopped, as by SIGSTOP,
 * inside its transaction); B claims meanwhile. The transaction's idle limit
 * (1 s) is far below its lock wait (4 s): the server ends A's session and B
 * gets the event. Direct to the server as its superuser, without startup
 * timeouts: only the transaction's own settings apply.
 */
async function stalledConsumer(create: Create) {
  const options: PostgresBackendOptions = {
    connectionString: server.url,
    namespace: `stalled-${++namespaces}`,
    poolSize: 1,
    startupTimeouts: false,
    idleInTransactionTimeoutMs: 1000,
    lockTimeoutMs: 4000,
  }
  const [a, b] = [create(options), create(options)] as [Backend, Backend]
  await createQueue(a)
  await (a.nativeQueue as NativeQueue).queueAppend(KEYS, {
    capacity: 10,
    mode: 'all',
    events: [event(0)],
  })
  await b.head('warm')
  let releaseA: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    releaseA = resolve
  })
  let loaded: () => void = () => {}
  const aLoaded = new Promise<void>((resolve) => {
    loaded = resolve
  })
  const query = pg.Client.prototype.query
  let stall = true
  // A's load answered, its result held back until B's claim settled.
  pg.Client.prototype.query = function stalled(this: pg.Client, ...args: unknown[]) {
    const result = (query as (...a: unknown[]) => unknown).apply(this, args)
    if (!(stall && typeof args[0] === 'string' && args[0].includes(LOAD_MARK))) return result
    stall = false
    return (result as Promise<unknown>).then(async (rows) => {
      loaded()
      await gate
      return rows
    })
  } as typeof query
  const claim = (backend: Backend, holder: string) =>
    (backend.nativeQueue as NativeQueue).queueClaim(KEYS, {
      holder,
      ttlMs: 30_000,
      claimedAt: '2026-12-03T00:00:00.000Z',
    })
  const codeOf = (error: unknown) => (isAgentStateError(error) ? error.code : String(error))
  try {
    const first = claim(a, 'a').then(
      (claimed) => claimed?.lease.holder ?? 'empty',
      (error: unknown) => codeOf(error),
    )
    await aLoaded
    const second = await claim(b, 'b').then(
      (claimed) => ({ holder: claimed?.lease.holder, seq: decode(claimed?.event).seq }),
      (error: unknown) => ({ code: codeOf(error) }),
    )
    releaseA()
    return { a: await first, b: second }
  } finally {
    pg.Client.prototype.query = query
  }
}

describe('postgres native queue', () => {
  it('16 producers on 16 connections through PgBouncer: the capacity exact, each number once', async () => {
    expect(await sixteenProducers(await importCreate())).toEqual(EXACT)
  })

  it('a consumer stopped inside its transaction holds the head only until its idle limit', async () => {
    // A's connection was ended by the server: its write may or may not have happened, for all
    // it knows (it did not: B got the event).
    expect(await stalledConsumer(await importCreate())).toEqual({
      a: 'INDETERMINATE',
      b: { holder: 'b', seq: 0 },
    })
  })
})

describe('postgres native queue mutants', () => {
  /** `createPostgresBackend` with the queue statements `mutate` returns. */
  async function mutant(
    mutate: (
      original: QueueStatementsModule.QueueStatements,
    ) => Partial<QueueStatementsModule.QueueStatements>,
  ): Promise<Create> {
    vi.resetModules()
    vi.doMock('../src/queue-statements.js', async (importOriginal) => {
      const original = await importOriginal<typeof QueueStatementsModule>()
      return {
        ...original,
        buildQueueStatements: (schema: string) => {
          const built = original.buildQueueStatements(schema)
          return { ...built, ...mutate(built) }
        },
      }
    })
    return importCreate()
  }

  it('a lock statement that locks nothing lets producers take one number twice, which the check sees', async () => {
    const create = await mutant((original) => ({
      lock: original.lock.replaceAll('FOR UPDATE', '').replaceAll('FOR SHARE', ''),
    }))
    const outcome = await sixteenProducers(create)
    // The check expects 12 numbers each stored once: here two producers read the same tail.
    expect(outcome.distinctEvents).toBeLessThan(12)
  })

  it('a transaction that sets only its lock timeout keeps a stopped consumer holding the head, which the check sees', async () => {
    const create = await mutant(() => ({
      limits: `SELECT set_config('lock_timeout', $1, true), $2::text`,
    }))
    // The check expects B to get the event: here B's lock wait (4 s) runs out first.
    expect(await stalledConsumer(create)).toEqual({ a: 'a', b: { code: 'UNAVAILABLE' } })
  })

  it('a transaction whose COMMIT was sent, reported as not applied, makes the stopped consumer UNAVAILABLE, which the check sees', async () => {
    // The check expects INDETERMINATE: A's writes and COMMIT went out on a connection the server
    // had ended, and A cannot know they did not commit (UNAVAILABLE would invite a second delivery).
    expect(await stalledConsumer(await importCreate({ queueMayHaveApplied: 'never' }))).toEqual({
      a: 'UNAVAILABLE',
      b: { holder: 'b', seq: 0 },
    })
  })
})
