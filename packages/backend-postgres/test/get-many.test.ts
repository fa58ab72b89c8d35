import {
  type Backend,
  getManyByGets,
  isAgentStateError,
  MAX_GET_MANY_KEYS,
  type StoredValue,
} from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { openPostgresBackend } from '../src/index.js'
import { cost as countCost, countQueries } from './query-count.js'

/**
 * The native `getMany` (src/get-many.ts): what the contract's get-many tier cannot see from
 * outside. Its statements are counted on the client; a corrupt row fails the whole call. Each
 * check also runs on a broken `getMany` it must catch.
 */

const server = await startPostgresServer()
afterAll(() => server.stop())

const { counts } = countQueries()
const bytes = (text: string) => new TextEncoder().encode(text)
type GetMany = (keys: readonly string[]) => Promise<(StoredValue | null)[]>

let namespaces = 0
async function open(): Promise<Backend> {
  namespaces++
  const backend = await openPostgresBackend({
    connectionString: server.url,
    namespace: `many-${namespaces}`,
    poolSize: 4,
  })
  await backend.head('warm') // migrations and the first connection stay out of the counts
  return backend
}

function nativeOf(backend: Backend): GetMany {
  const native = backend.getMany?.bind(backend)
  if (native === undefined) throw new Error('the postgres backend has no getMany')
  return native
}

/** Statements and round trips `call` sends, and its error code if it fails. */
const cost = (call: () => Promise<unknown>) => countCost(counts, call)

/** The costs the native `getMany` must have, measured on `read`. */
async function costs(backend: Backend, read: GetMany) {
  const keys = Array.from({ length: 10 }, (_, i) => `k/${i}`)
  for (const key of keys.slice(0, 7)) await backend.put(key, bytes(key))
  const most = Array.from({ length: MAX_GET_MANY_KEYS }, (_, i) => `k/${i % 500}`)
  return {
    ten: await cost(() => read(keys)),
    most: await cost(() => read(most)),
    none: await cost(() => read([])),
    invalidKey: await cost(() => read(['k/1', 'k//2'])),
    tooMany: await cost(() => read([...most, 'k/1'])),
  }
}

const EXPECTED = {
  ten: { statements: 1, roundTrips: 1 },
  most: { statements: 1, roundTrips: 1 },
  none: { statements: 0, roundTrips: 0 },
  invalidKey: { statements: 0, roundTrips: 0, code: 'INVALID_KEY' },
  tooMany: { statements: 0, roundTrips: 0, code: 'INVALID_ARGUMENT' },
}

/** Corrupts the stored value of `key` behind the backend, keeping its size. */
async function corrupt(namespace: string, key: string): Promise<void> {
  await server.sql(
    `UPDATE agent_state.agent_state_entries SET value = 'jello'::bytea WHERE namespace = '${namespace}' AND key = '${key}'`,
  )
}

/** What `read` answers for three keys, the middle one corrupt: a code, or the values read. */
async function withCorruptRow(read: (backend: Backend) => GetMany): Promise<unknown> {
  const backend = await open()
  try {
    for (const key of ['a', 'b', 'c']) await backend.put(key, bytes('hello'))
    await corrupt(`many-${namespaces}`, 'b')
    const got = await read(backend)(['a', 'b', 'c'])
    return got.map((entry) => (entry === null ? null : new TextDecoder().decode(entry.value)))
  } catch (error) {
    return isAgentStateError(error) ? error.code : error
  } finally {
    await backend.close()
  }
}

describe('native getMany on PostgreSQL', () => {
  it('sends one statement for up to 1000 keys and none for a refused argument', async () => {
    const backend = await open()
    try {
      expect(await costs(backend, nativeOf(backend))).toEqual(EXPECTED)
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('mutant: getMany by gets sends a statement per distinct key', async () => {
    const backend = await open()
    try {
      const measured = await costs(backend, (keys) => getManyByGets(backend, keys))
      expect(measured.ten.statements).toBe(10)
      expect(measured).not.toEqual(EXPECTED)
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('a corrupt row fails the whole call with CORRUPT', async () => {
    expect(await withCorruptRow(nativeOf)).toBe('CORRUPT')
  }, 30_000)

  it('mutant: a getMany that answers null for an entry it cannot read hides the corruption', async () => {
    const lenient = (backend: Backend): GetMany => {
      return (keys) => Promise.all(keys.map((key) => backend.get(key).catch(() => null)))
    }
    expect(await withCorruptRow(lenient)).toEqual(['hello', null, 'hello'])
  }, 30_000)

  it('is CLOSED after close, before any key is checked', async () => {
    const backend = await open()
    await backend.close()
    expect(await cost(() => nativeOf(backend)(['']))).toEqual({
      statements: 0,
      roundTrips: 0,
      code: 'CLOSED',
    })
  }, 30_000)
})
