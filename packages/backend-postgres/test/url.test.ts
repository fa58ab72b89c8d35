import { type Backend, isAgentStateError, openBackend } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { createBackendFromUrl, openPostgresBackend } from '../src/index.js'
import { APP_PASSWORD, APP_ROLE, createAppRole } from './roles.js'

const server = await startPostgresServer()
await createAppRole(server, 'url_schema')
afterAll(() => server.stop())

/** Every way a password could leak: raw, percent-encoded, JSON-escaped. */
function leaks(text: string, password: string): boolean {
  return [password, encodeURIComponent(password), JSON.stringify(password).slice(1, -1)].some(
    (form) => text.includes(form),
  )
}

/** The error as a log line would show it: message, stack, context and the whole cause chain. */
function shown(error: unknown): string {
  const parts: string[] = []
  for (let e = error as { cause?: unknown } | undefined; e !== undefined; e = e.cause as never) {
    parts.push(
      String(e),
      (e as Error).stack ?? '',
      JSON.stringify(e, Object.getOwnPropertyNames(e)),
    )
    if (typeof e !== 'object' || e === null) break
  }
  return parts.join('\n')
}

async function failure(open: () => Promise<Backend>): Promise<unknown> {
  return open().then(
    async (backend) => {
      await backend.close()
      return undefined
    },
    (error: unknown) => error,
  )
}

describe('postgres:// URLs', () => {
  it('openBackend opens postgres:// and postgresql:// with schema and pool options', async () => {
    for (const scheme of ['postgres', 'postgresql']) {
      const url = server
        .urlFor(APP_ROLE, APP_PASSWORD, 'postgres', 'schema=url_schema&poolSize=2')
        .replace(/^postgres/, scheme)
      const backend = await openBackend(url, { namespace: `via-${scheme}` })
      expect(backend.name).toBe('postgres')
      await backend.put('k', new Uint8Array([1]))
      expect((await backend.get('k'))?.value).toEqual(new Uint8Array([1]))
      await backend.close()
    }
    const tables = await server.sql(
      "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'url_schema'",
    )
    expect(tables.trim()).toBe('agent_state_entries,agent_state_migrations')
  }, 60_000)

  it('changeNotification=false drops the capability and watch', async () => {
    const url = server.urlFor(APP_ROLE, APP_PASSWORD, 'postgres', 'schema=url_schema')
    const on = await createBackendFromUrl(url)
    const off = await createBackendFromUrl(`${url}&changeNotification=false`)
    expect(on.capabilities.changeNotification).toEqual({ mode: 'push', maxDelayMs: 1000 })
    expect(typeof on.watch).toBe('function')
    expect(off.capabilities.changeNotification).toBeUndefined()
    expect(off.watch).toBeUndefined()
    await on.close()
    await off.close()
  }, 60_000)

  it('a wrong password fails with UNAVAILABLE naming the server, never the password', async () => {
    const wrong = `${APP_PASSWORD}-wrong`
    const error = await failure(() =>
      createBackendFromUrl(server.urlFor(APP_ROLE, wrong, 'postgres', 'schema=url_schema')),
    )
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as Error).message).toContain(`127.0.0.1:${server.port}/postgres as ${APP_ROLE}`)
    expect(leaks(shown(error), wrong)).toBe(false)
    expect(leaks(shown(error), APP_PASSWORD)).toBe(false)
  }, 60_000)

  it('a malformed URL is INVALID_ARGUMENT without the password', async () => {
    for (const query of [
      'bogus=1',
      'sslmode=sometimes',
      'poolSize=many',
      'schema=a&schema=b',
      'listenPort=0',
      'listenPort=x',
      'changeNotification=maybe',
    ]) {
      const url = server.urlFor(APP_ROLE, APP_PASSWORD, 'postgres', query)
      const error = await failure(() => createBackendFromUrl(url))
      expect(isAgentStateError(error, 'INVALID_ARGUMENT')).toBe(true)
      expect(leaks(shown(error), APP_PASSWORD)).toBe(false)
    }
    // A password with unencoded special characters is still redacted.
    const raw = `postgres://${APP_ROLE}:${APP_PASSWORD}@127.0.0.1:${server.port}/postgres?bogus=1`
    const error = await failure(() => createBackendFromUrl(raw))
    expect(isAgentStateError(error, 'INVALID_ARGUMENT')).toBe(true)
    expect(leaks(shown(error), APP_PASSWORD)).toBe(false)
  }, 60_000)

  it('mutant: a message naming the connection string would be caught', () => {
    const url = server.urlFor(APP_ROLE, APP_PASSWORD)
    expect(leaks(shown(new Error(`cannot open ${url}`)), APP_PASSWORD)).toBe(true)
  })

  it('sslmode is passed to pg: require against a server without TLS is refused', async () => {
    const url = server.urlFor(
      APP_ROLE,
      APP_PASSWORD,
      'postgres',
      'schema=url_schema&sslmode=require',
    )
    const error = await failure(() => createBackendFromUrl(url))
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect(shown(error)).toMatch(/does not support SSL/)
    expect(leaks(shown(error), APP_PASSWORD)).toBe(false)
    // And sslmode=disable connects.
    const plain = await createBackendFromUrl(
      server.urlFor(APP_ROLE, APP_PASSWORD, 'postgres', 'schema=url_schema&sslmode=disable'),
    )
    await plain.close()
  }, 60_000)

  it('the role owning only its schema cannot create another one', async () => {
    const error = await failure(() =>
      openPostgresBackend({
        connectionString: server.urlFor(APP_ROLE, APP_PASSWORD),
        schema: 'not_granted',
      }),
    )
    expect(isAgentStateError(error, 'UNAVAILABLE')).toBe(true)
    expect((error as Error).message).toMatch(/42501/)
  }, 60_000)
})
