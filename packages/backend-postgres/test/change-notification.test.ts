import { CONTRACT_CHECKS, type ContractOptions, runContractCheck } from '@agent-state/contract'
import type { ChangeHint } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { openWithHooks } from '../src/postgres-backend.js'

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
