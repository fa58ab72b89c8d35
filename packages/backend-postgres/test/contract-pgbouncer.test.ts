import { describeBackendContract } from '@agent-state/contract'
import type { ChangeHint } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createBackendFromUrl } from '../src/index.js'
import { openWithHooks } from '../src/postgres-backend.js'
import { APP_PASSWORD, APP_ROLE, startAppBehindPgBouncer } from './roles.js'

// The whole contract again, through a real PgBouncer in transaction-pooling
// mode, as a role that owns only its schema: any session state the backend
// relied on (SET, named prepared statements, session advisory locks) would
// land on another server connection and fail here.
const { server, bouncer } = await startAppBehindPgBouncer(8)

// LISTEN is session state, which transaction pooling cannot carry: the watch's listen connection
// goes to the server directly (listenHost/listenPort), everything else through PgBouncer.
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const url = bouncer.urlFor(
  APP_ROLE,
  APP_PASSWORD,
  'postgres',
  `startupTimeouts=false&listenHost=127.0.0.1&listenPort=${server.port}`,
)

describeBackendContract({
  name: 'postgres-pgbouncer',
  create: (ctx) =>
    createBackendFromUrl(url, {
      namespace: ctx.namespace,
      maxValueBytes: 16 * 1024 * 1024,
      poolSize: 4,
    }),
  process: {
    module: new URL('./child-factory.ts', import.meta.url).pathname,
    options: {
      connectionString: bouncer.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
      listenConnectionString: server.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
      startupTimeouts: false,
      maxValueBytes: 16 * 1024 * 1024,
      poolSize: 2,
    },
    writeSteps: ['before-write'],
  },
})

describe('watch through PgBouncer without a direct listen connection', () => {
  const throughBouncer = (namespace: string, probe: boolean) =>
    openWithHooks(
      {
        connectionString: bouncer.urlFor(APP_ROLE, APP_PASSWORD, 'postgres'),
        startupTimeouts: false,
        namespace,
        poolSize: 2,
        connectTimeoutMs: 2000,
      },
      { watcher: { probe } },
    )

  it('fails the watch with UNAVAILABLE: the probe notification never reaches the LISTEN', async () => {
    const backend = await throughBouncer('no-listen', true)
    try {
      const first = backend.watch?.('', {})[Symbol.asyncIterator]().next()
      await expect(first).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        message: expect.stringMatching(/listenConnectionString, or the URL parameters listenHost/),
      })
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('mutant: without the probe the watch starts and then misses a write', async () => {
    const backend = await throughBouncer('no-probe', false)
    const writer = await throughBouncer('no-probe', true)
    const controller = new AbortController()
    const hints: ChangeHint[] = []
    const done = (async () => {
      for await (const hint of backend.watch?.('', { signal: controller.signal }) ?? []) {
        hints.push(hint)
      }
    })()
    try {
      const deadline = Date.now() + 5000
      while (hints.length === 0 && Date.now() < deadline) await sleep(10)
      expect(hints).toEqual([{ kind: 'resync' }])
      await writer.put('missed', new Uint8Array([1]))
      // The claimed delay plus the tier's default loaded-host margin: the hint never comes.
      const claimed = backend.capabilities.changeNotification?.maxDelayMs as number
      await sleep(claimed + 2000)
      expect(hints).toEqual([{ kind: 'resync' }])
    } finally {
      controller.abort()
      await done
      await backend.close()
      await writer.close()
    }
  }, 30_000)
})
