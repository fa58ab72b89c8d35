import { CONTRACT_CHECKS, type ContractOptions, runContractCheck } from '@agent-state/contract'
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
