import { CONTRACT_CHECKS, type ContractOptions, runContractCheck } from '@agent-state/contract'
import type { Backend, ChangeHint } from '@agent-state/core'
import { startPostgresServer, startTcpProxy } from '@agent-state/test-services'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { POSTGRES_CHANGE_NOTIFICATION } from '../src/change-notification.js'
import { openWithHooks, type PostgresBackendHooks } from '../src/postgres-backend.js'

// A real PostgreSQL 15 for this file: never a skip.
const server = await startPostgresServer()
afterAll(() => server.stop())

const INTERRUPTED =
  'change-notification/an-interrupted-watch-resyncs-and-misses-no-write-made-meanwhile'

function interrupted() {
  const check = CONTRACT_CHECKS.find((c) => c.id === INTERRUPTED)
  if (check === undefined) throw new Error(`no check ${INTERRUPTED}`)
  return check
}

/** The tier's options with the watching backend's resync on reconnect on or off. */
function options(resyncOnReconnect: boolean): ContractOptions {
  return {
    name: `postgres: resync on reconnect ${resyncOnReconnect}`,
    create: (ctx) =>
      openWithHooks(
        { connectionString: server.url, namespace: ctx.namespace, poolSize: 2 },
        { watcher: { resyncOnReconnect } },
      ),
    process: {
      module: new URL('./child-factory.ts', import.meta.url).pathname,
      options: { connectionString: server.url, poolSize: 2 },
    },
    // The failing run waits out the allowed delay of its first lost round; a short margin keeps
    // it quick without changing what is judged (the correct backend passes with it too).
    scale: { watchMarginMs: 500 },
  }
}

describe('the change-notification tier catches a broken PostgreSQL watch', () => {
  it('the same check and options pass on the correct watch', async () => {
    await expect(runContractCheck(interrupted(), options(true))).resolves.toMatchObject({
      interruptions: 3,
    })
  }, 60_000)

  it('mutant: a listen connection reopened without resync misses the writes made while it was down', async () => {
    let caught: unknown
    try {
      await runContractCheck(interrupted(), options(false))
    } catch (error) {
      caught = error
    }
    expect(caught, 'the check must fail on the mutant').toBeInstanceOf(Error)
    expect((caught as Error).name).toBe('AssertionError')
    expect((caught as Error).message).toMatch(/made after the watch was interrupted/)
  }, 60_000)
})

/** The next hint of `hints`, or `'none'` after `ms`. */
async function nextHint(
  hints: AsyncIterator<ChangeHint>,
  ms: number,
): Promise<ChangeHint | 'none'> {
  let timer: NodeJS.Timeout | undefined
  const none = new Promise<'none'>((resolve) => {
    timer = setTimeout(() => resolve('none'), ms)
  })
  try {
    return await Promise.race([hints.next().then((step) => step.value as ChangeHint), none])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The last watch ends while the listen connection is still being opened, and a new watch starts
 * at once (what a daemon's `next({ waitMs })` does twice in a row): the new watch must get a
 * connection of its own, its first hint and the next write.
 */
async function watchOpenedWhileConnecting(connectForLateWatches: boolean) {
  const namespace = `late-${Math.random().toString(36).slice(2)}`
  const watcher = await openWithHooks(
    { connectionString: server.url, namespace, poolSize: 2 },
    { watcher: { connectForLateWatches } },
  )
  const writer = await openWithHooks({ connectionString: server.url, namespace, poolSize: 2 }, {})
  const first = new AbortController()
  const second = new AbortController()
  try {
    const watch = watcher.watch?.bind(watcher)
    if (watch === undefined) throw new Error('the backend has no watch')
    // Opening the watch starts the connection; aborting it drops the attempt in flight.
    watch('jobs/', { signal: first.signal })
    first.abort()
    const hints = watch('jobs/', { signal: second.signal })[Symbol.asyncIterator]()
    const started = await nextHint(hints, 5_000)
    if (started === 'none') return { started, write: 'none' as const }
    await writer.put('jobs/a', new TextEncoder().encode('x'))
    return { started, write: await nextHint(hints, 5_000) }
  } finally {
    second.abort()
    await Promise.all([watcher.close(), writer.close()])
  }
}

describe('a watch opened while the previous listen connection was being dropped', () => {
  it('gets a connection of its own: its first hint, then the next write', async () => {
    expect(await watchOpenedWhileConnecting(true)).toEqual({
      started: { kind: 'resync' },
      write: { kind: 'key', key: 'jobs/a' },
    })
  }, 30_000)

  it('mutant: waiting on the dropped attempt, the watch never starts', async () => {
    expect(await watchOpenedWhileConnecting(false)).toEqual({ started: 'none', write: 'none' })
  }, 30_000)
})

const LATE =
  'change-notification/a-watch-opened-as-the-instance-s-previous-watch-ends-still-starts-and-is-hinted'

describe("the contract's check of a watch opened as the previous one ends", () => {
  const late = CONTRACT_CHECKS.find((c) => c.id === LATE)
  const lateOptions = (connectForLateWatches: boolean): ContractOptions => ({
    ...options(true),
    name: `postgres: connect for late watches ${connectForLateWatches}`,
    create: (ctx) =>
      openWithHooks(
        { connectionString: server.url, namespace: ctx.namespace, poolSize: 2 },
        { watcher: { connectForLateWatches } },
      ),
  })

  it('passes on the correct watch', async () => {
    if (late === undefined) throw new Error(`no check ${LATE}`)
    await runContractCheck(late, lateOptions(true))
  }, 60_000)

  it('fails on the mutant that waits on the dropped attempt', async () => {
    if (late === undefined) throw new Error(`no check ${LATE}`)
    let caught: unknown
    try {
      await runContractCheck(late, lateOptions(false))
    } catch (error) {
      caught = error
    }
    expect(caught, 'the check must fail on the mutant').toBeInstanceOf(Error)
    expect((caught as Error).name).toBe('AssertionError')
    expect((caught as Error).message).toMatch(/ended while opening did not start/)
  }, 60_000)
})

/**
 * A watcher and a writer on the same namespace; the writer's change hint statement is `announce`
 * (given the backend's own). Returns what `during` makes of the writer's put and the watch.
 */
async function announced(
  hooks: Omit<PostgresBackendHooks, 'statements'> & { announce: (own: string) => string },
  during: (put: Promise<unknown>, hints: AsyncIterator<ChangeHint>) => Promise<unknown>,
) {
  const { announce, ...rest } = hooks
  return withWatchedWriter(
    // A long lock_timeout: one test holds the hint back on an advisory lock.
    { poolSize: 2, lockTimeoutMs: 30_000 },
    { ...rest, statements: (own) => ({ ...own, announce: announce(own.announce) }) },
    (writer, hints) => during(writer.put('jobs/a', new TextEncoder().encode('x')), hints),
  )
}

/**
 * A watcher on `jobs/` (its first resync hint taken) and a writer on the same namespace,
 * opened with `writerOptions` and `hooks`: what `body` makes of them; both closed after.
 */
async function withWatchedWriter<T>(
  writerOptions: { poolSize: number; lockTimeoutMs?: number },
  hooks: PostgresBackendHooks,
  body: (writer: Backend, hints: AsyncIterator<ChangeHint>) => Promise<T>,
): Promise<T> {
  const namespace = `hint-${Math.random().toString(36).slice(2)}`
  const watcher = await openWithHooks({ connectionString: server.url, namespace, poolSize: 2 }, {})
  const writer = await openWithHooks(
    { connectionString: server.url, namespace, ...writerOptions },
    hooks,
  )
  const stop = new AbortController()
  try {
    const watch = watcher.watch?.bind(watcher)
    if (watch === undefined) throw new Error('the backend has no watch')
    const hints = watch('jobs/', { signal: stop.signal })[Symbol.asyncIterator]()
    expect(await nextHint(hints, 5_000)).toEqual({ kind: 'resync' })
    return await body(writer, hints)
  } finally {
    stop.abort()
    await Promise.all([watcher.close(), writer.close()])
  }
}

/** The backend's hint statement with a first column that divides by zero: always, or the first time. */
function failing(always: boolean) {
  const sequence = `hint_once_${Math.random().toString(36).slice(2)}`
  const created = server.sql(`CREATE SEQUENCE ${sequence}`)
  return {
    created,
    announce: (own: string) =>
      own.replace(
        'SELECT ',
        always ? 'SELECT 1 / 0, ' : `SELECT 1 / (nextval('${sequence}') - 1), `,
      ),
  }
}

/** How the put settled. */
function settled(put: Promise<unknown>) {
  return put.then(
    () => 'acknowledged',
    (error: unknown) => (error as { code?: string }).code,
  )
}

/** How the put settled and the watcher's next hint after it. */
async function settledAndHint(put: Promise<unknown>, hints: AsyncIterator<ChangeHint>) {
  return { settled: await settled(put), hint: await nextHint(hints, HINT_WAIT_MS) }
}

// The claimed delay plus the contract tier's default margin for a loaded host.
const HINT_WAIT_MS = POSTGRES_CHANGE_NOTIFICATION.maxDelayMs + 2_000

describe('a write is announced after its commit and before its acknowledgement', () => {
  it('its hint failed once: it is sent again on another connection', async () => {
    const { created, announce } = failing(false)
    await created
    expect(await announced({ announce }, settledAndHint)).toEqual({
      settled: 'acknowledged',
      hint: { kind: 'key', key: 'jobs/a' },
    })
  }, 30_000)

  it('mutant: a failed hint is dropped, and the watcher never hears of the write', async () => {
    const { created, announce } = failing(false)
    await created
    expect(await announced({ announce, retryAnnounce: false }, settledAndHint)).toEqual({
      settled: 'acknowledged',
      hint: 'none',
    })
  }, 30_000)

  it('its hint cannot be sent at all: the committed write is INDETERMINATE, never acknowledged', async () => {
    const { announce } = failing(true)
    expect(await announced({ announce }, settled)).toBe('INDETERMINATE')
  }, 30_000)

  it('mutant: the unsent hint is dropped and the write acknowledged', async () => {
    const { announce } = failing(true)
    expect(await announced({ announce, retryAnnounce: false }, settled)).toBe('acknowledged')
  }, 30_000)

  /**
   * The hint waits for an advisory lock this test holds: whether the put resolved in 300 ms,
   * then (lock released) the hint.
   */
  async function ackOrHint(announceBeforeAck: boolean) {
    const lock = 4_000_000 + Math.floor(Math.random() * 1_000_000)
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    try {
      await admin.query('SELECT pg_advisory_lock($1)', [lock])
      return await announced(
        {
          announceBeforeAck,
          announce: (own) => own.replace('SELECT ', `SELECT pg_advisory_xact_lock(${lock}), `),
        },
        async (put, hints) => {
          const acknowledged = await Promise.race([
            put.then(() => true),
            new Promise<false>((resolve) => setTimeout(() => resolve(false), 300)),
          ])
          await admin.query('SELECT pg_advisory_unlock($1)', [lock])
          await put
          return { acknowledgedBeforeHint: acknowledged, hint: await nextHint(hints, HINT_WAIT_MS) }
        },
      )
    } finally {
      await admin.end()
    }
  }

  it('the put is not acknowledged while its hint is held back', async () => {
    expect(await ackOrHint(true)).toEqual({
      acknowledgedBeforeHint: false,
      hint: { kind: 'key', key: 'jobs/a' },
    })
  }, 30_000)

  it('mutant: acknowledged before its hint was sent', async () => {
    expect(await ackOrHint(false)).toEqual({
      acknowledgedBeforeHint: true,
      hint: { kind: 'key', key: 'jobs/a' },
    })
  }, 30_000)
})

/**
 * 64 concurrent puts of distinct keys from a writer with 4 connections (so most hints are
 * batched, hint-batch.ts), its batch statement changed by `announceKeys`: whether every put was
 * acknowledged, and the keys the watcher did not hear of.
 */
async function concurrentPuts(
  hooks: Omit<PostgresBackendHooks, 'statements'> & { announceKeys: (own: string) => string },
) {
  const { announceKeys, ...rest } = hooks
  return withWatchedWriter(
    { poolSize: 4 },
    { ...rest, statements: (own) => ({ ...own, announceKeys: announceKeys(own.announceKeys) }) },
    async (writer, hints) => {
      const keys = Array.from({ length: 64 }, (_, i) => `jobs/${i}`)
      const settledAll = await Promise.all(
        keys.map((key) => settled(writer.put(key, new TextEncoder().encode('x')))),
      )
      const unheard = new Set(keys)
      while (unheard.size > 0) {
        const hint = await nextHint(hints, HINT_WAIT_MS)
        if (hint === 'none') break
        if (hint.kind === 'key') unheard.delete(hint.key)
      }
      return {
        acknowledged: settledAll.filter((s) => s === 'acknowledged').length,
        unheard: unheard.size,
      }
    },
  )
}

describe('the change hints of concurrent writes, batched', () => {
  it('name every key written', async () => {
    expect(await concurrentPuts({ announceKeys: (own) => own })).toEqual({
      acknowledged: 64,
      unheard: 0,
    })
  }, 60_000)

  it('mutant: a batch that names only its first key leaves writes unheard', async () => {
    const result = await concurrentPuts({ announceKeys: (own) => `${own} LIMIT 1` })
    expect(result.acknowledged).toBe(64)
    expect(result.unheard).toBeGreaterThan(0)
  }, 60_000)

  it('a batch that failed is sent again key by key: every write acknowledged and heard', async () => {
    const fail = (own: string) => own.replace('SELECT ', 'SELECT 1 / 0, ')
    expect(await concurrentPuts({ announceKeys: fail })).toEqual({ acknowledged: 64, unheard: 0 })
  }, 60_000)

  it('mutant: a failed batch dropped leaves writes unheard', async () => {
    const fail = (own: string) => own.replace('SELECT ', 'SELECT 1 / 0, ')
    const result = await concurrentPuts({ announceKeys: fail, retryAnnounce: false })
    expect(result.acknowledged).toBe(64)
    expect(result.unheard).toBeGreaterThan(0)
  }, 60_000)
})

/**
 * A watch started while its pool cannot reach the server (the pool goes through a TCP proxy that
 * refuses; the listen connection is direct): the probe's statement fails, which says nothing of
 * the listen connection. The proxy accepts again after 1.5 s. Resolves the watch's first step
 * (its first hint, or the error it failed with), or 'none' after 10 s.
 */
async function watchWhilePoolDown(probeFailureIsSilence: boolean) {
  const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: server.port } })
  const backend = await openWithHooks(
    {
      connectionString: server.url.replace(`:${server.port}/`, `:${proxy.port}/`),
      listenConnectionString: server.url,
      namespace: `pool-down-${Math.random().toString(36).slice(2)}`,
      poolSize: 2,
      connectTimeoutMs: 1000,
    },
    { watcher: { probeFailureIsSilence } },
  )
  const controller = new AbortController()
  try {
    await proxy.setRefusing(true)
    proxy.dropAll()
    const watch = backend.watch?.bind(backend)
    if (watch === undefined) throw new Error('the backend has no watch')
    const first = watch('', { signal: controller.signal })
      [Symbol.asyncIterator]()
      .next()
      .then(
        (step) => step.value as ChangeHint,
        (error: { code?: unknown; message?: unknown }) => ({
          code: error.code,
          message: error.message,
        }),
      )
    await new Promise((resolve) => setTimeout(resolve, 1500))
    await proxy.setRefusing(false)
    let timer: NodeJS.Timeout | undefined
    const none = new Promise<'none'>((resolve) => {
      timer = setTimeout(() => resolve('none'), 10_000)
    })
    try {
      return await Promise.race([first, none])
    } finally {
      clearTimeout(timer)
    }
  } finally {
    controller.abort()
    await backend.close()
    await proxy.stop()
  }
}

describe('a watch whose probe cannot be sent (the pool unreachable)', () => {
  it('retries instead of reporting the listen connection misconfigured, and starts once the pool is back', async () => {
    expect(await watchWhilePoolDown(false)).toEqual({ kind: 'resync' })
  }, 30_000)

  it('mutant: a failed probe statement taken for a silent LISTEN fails the watch as misconfigured', async () => {
    expect(await watchWhilePoolDown(true)).toEqual({
      code: 'UNAVAILABLE',
      message: expect.stringMatching(/^PostgreSQL LISTEN receives no notifications/),
    })
  }, 30_000)
})
