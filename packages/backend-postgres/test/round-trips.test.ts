import type { Backend } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { openWithHooks, type PostgresBackendHooks } from '../src/postgres-backend.js'
import { cost as countCost, countQueries } from './query-count.js'

/**
 * Round trips and statements per operation, counted on the client (the
 * load-independent cost the benchmark's latencies follow). A statement sent
 * while its connection has none in flight starts a round trip; one sent while
 * another is in flight (node-postgres pipeline mode) rides along with it.
 */

const server = await startPostgresServer()
afterAll(() => server.stop())

const { counts } = countQueries()

let namespaces = 0
async function open(hooks: PostgresBackendHooks = {}, poolSize = 1): Promise<Backend> {
  namespaces++
  const backend = await openWithHooks(
    { connectionString: server.url, namespace: `trips-${namespaces}`, poolSize },
    hooks,
  )
  await backend.head('warm') // migrations and the first connection stay out of the counts
  return backend
}

/** Runs `operation` and returns its round trips and statements, and its error code if it failed. */
const cost = (operation: () => Promise<unknown>) => countCost(counts, operation)

const bytes = (text: string) => new TextEncoder().encode(text)

/** Every value write and its refusals, each with the cost the backend must have. */
async function writeCosts(backend: Backend) {
  const lease = await backend.acquireLease('leased', { holder: 'a', ttlMs: 60_000 })
  const first = await backend.put('cas', bytes('1'))
  return {
    create: await cost(() => backend.put('new', bytes('1'))),
    overwrite: await cost(() => backend.put('new', bytes('2'))),
    createOnly: await cost(() => backend.put('only', bytes('1'), { ifNoneMatch: '*' })),
    createOnlyTaken: await cost(() => backend.put('only', bytes('2'), { ifNoneMatch: '*' })),
    compareAndSet: await cost(() => backend.put('cas', bytes('2'), { ifMatch: first.version })),
    compareAndSetStale: await cost(() =>
      backend.put('cas', bytes('3'), { ifMatch: first.version }),
    ),
    fenced: await cost(() => backend.put('leased', bytes('1'), { lease })),
    unfencedOnLeased: await cost(() => backend.put('leased', bytes('2'))),
    fencedWrongToken: await cost(() =>
      backend.put('leased', bytes('2'), { lease: { ...lease, token: lease.token + 1 } }),
    ),
    fencedNoRow: await cost(() =>
      backend.put('nothing', bytes('2'), { lease: { ...lease, key: 'nothing' } }),
    ),
    // Fenced by another key's lease (crossKeyFence): one call of the fenced put function.
    crossKeyFenced: await cost(() => backend.put('other', bytes('1'), { fence: lease })),
    crossKeyFenceLost: await cost(() =>
      backend.put('other', bytes('2'), { fence: { ...lease, token: lease.token + 1 } }),
    ),
    delete: await cost(() => backend.delete('new')),
    deleteMissing: await cost(() => backend.delete('new')),
    fencedDelete: await cost(() => backend.delete('leased', { lease })),
  }
}

describe('round trips per operation', () => {
  it('every value write, and its refusal, is one round trip: its statement and the pipelined change hint', async () => {
    const backend = await open()
    try {
      const costs = await writeCosts(backend)
      const one = { roundTrips: 1, statements: 2 }
      expect(costs).toEqual({
        create: one,
        overwrite: one,
        createOnly: one,
        createOnlyTaken: { ...one, code: 'PRECONDITION_FAILED' },
        compareAndSet: one,
        compareAndSetStale: { ...one, code: 'PRECONDITION_FAILED' },
        fenced: one,
        unfencedOnLeased: { ...one, code: 'LEASE_HELD' },
        fencedWrongToken: { ...one, code: 'LEASE_LOST' },
        fencedNoRow: { ...one, code: 'LEASE_LOST' },
        crossKeyFenced: one,
        crossKeyFenceLost: { ...one, code: 'LEASE_LOST' },
        delete: one,
        deleteMissing: one,
        fencedDelete: one,
      })
      expect(await cost(() => backend.get('cas'))).toEqual({ roundTrips: 1, statements: 1 })
    } finally {
      await backend.close()
    }
  }, 30_000)

  it('mutant: a write that reads the row first costs two round trips, and the count shows it', async () => {
    const backend = await open({ readFirst: true })
    try {
      const costs = await writeCosts(backend)
      for (const [operation, { roundTrips }] of Object.entries(costs)) {
        expect(roundTrips, operation).toBe(2)
      }
    } finally {
      await backend.close()
    }
  }, 30_000)
})

/** Hint statements sent for 64 concurrent puts of distinct keys on a pool of 4 connections. */
async function hintsOfConcurrentPuts(hooks: PostgresBackendHooks): Promise<number> {
  const backend = await open(hooks, 4)
  try {
    const before = counts.hints
    await Promise.all(
      Array.from({ length: 64 }, (_, i) => backend.put(`concurrent/${i}`, bytes('1'))),
    )
    return counts.hints - before
  } finally {
    await backend.close()
  }
}

describe('change hints of concurrent writes', () => {
  // Batches form whenever a write commits while another's hint is in flight: with 64 writes
  // queued on 4 connections that is all but the first few (their exact count depends on timing).
  it('share statements: fewer hint statements than writes', async () => {
    expect(await hintsOfConcurrentPuts({})).toBeLessThan(64)
  }, 30_000)

  it('mutant: one hint per write sends 64', async () => {
    expect(await hintsOfConcurrentPuts({ batchHints: false })).toBe(64)
  }, 30_000)
})
