import { isAgentStateError, MAX_LEASE_TTL_MS } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createRedisBackend, type RedisBackendOptions } from '../src/index.js'

/** Option errors have the one shape every backend shares (core's parseBackendOptions). */
describe('options', () => {
  function optionError(options: unknown): unknown {
    try {
      createRedisBackend(options as RedisBackendOptions)
    } catch (error) {
      return error
    }
    throw new Error(`expected ${JSON.stringify(options)} to be rejected`)
  }

  it('refuses an unknown option (a typo) with the shared INVALID_ARGUMENT shape', () => {
    expect(optionError({ prot: 6379 })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^Invalid Redis backend option options: /),
      context: { backend: 'Redis', field: 'options' },
    })
  })

  it('names the bad field, nested ones by path, and never echoes the value', () => {
    expect(optionError({ replication: { replicas: 0, timeoutMs: 10 } })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { backend: 'Redis', field: 'replication.replicas' },
    })
    const error = optionError({ password: 42, port: 'Secret-Port-7' })
    expect(JSON.stringify(error)).not.toContain('Secret-Port-7')
    expect((error as Error).message).not.toContain('Secret-Port-7')
  })

  it('refuses sentinel together with cluster', () => {
    expect(
      optionError({
        sentinel: { name: 'm', nodes: [{ host: 'h', port: 1 }] },
        cluster: { nodes: [{ host: 'h', port: 2 }] },
      }),
    ).toMatchObject({ code: 'INVALID_ARGUMENT', context: { field: 'sentinel' } })
  })

  it('accepts what openBackend forwards (namespace)', () => {
    expect(() => createRedisBackend({ namespace: 'team-a' })).not.toThrow()
  })

  it('bounds maxLeaseTtlMs by core (24 h) and promotionHoldMs by maxLeaseTtlMs', () => {
    expect(optionError({ maxLeaseTtlMs: 24 * 60 * 60 * 1000 + 1 })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'maxLeaseTtlMs' },
    })
    expect(optionError({ maxLeaseTtlMs: 10_000, promotionHoldMs: 9999 })).toMatchObject({
      code: 'INVALID_ARGUMENT',
      context: { field: 'promotionHoldMs' },
    })
    expect(() =>
      createRedisBackend({ maxLeaseTtlMs: 10_000, promotionHoldMs: 10_000 }),
    ).not.toThrow()
    // Either alone is fine: the other is unbounded then.
    expect(() => createRedisBackend({ promotionHoldMs: 1 })).not.toThrow()
  })

  /** The code of an acquire on a port where nothing listens (UNAVAILABLE once it tries to connect). */
  async function acquireCode(options: RedisBackendOptions, ttlMs: number) {
    const b = createRedisBackend({ port: 1, connectTimeoutMs: 2000, ...options })
    try {
      await b.acquireLease('k', { holder: 'h', ttlMs })
      return { code: 'resolved', context: {} }
    } catch (error) {
      if (!isAgentStateError(error)) throw error
      return { code: error.code, context: error.context }
    } finally {
      await b.close()
    }
  }

  it('refuses a TTL above an explicit maxLeaseTtlMs without replication, before connecting', async () => {
    expect(await acquireCode({ maxLeaseTtlMs: 1000 }, 1001)).toEqual({
      code: 'INVALID_ARGUMENT',
      context: { key: 'k', ttlMs: 1001, maxLeaseTtlMs: 1000 },
    })
    // At the bound, the acquire goes to the server (none listens here).
    expect((await acquireCode({ maxLeaseTtlMs: 1000 }, 1000)).code).toBe('UNAVAILABLE')
    // By default every TTL core accepts (up to its 24 h) goes to the server.
    expect((await acquireCode({}, MAX_LEASE_TTL_MS)).code).toBe('UNAVAILABLE')
    // With replication there is no hold, so no bound.
    expect(
      (await acquireCode({ replication: { replicas: 1, timeoutMs: 100 } }, 3_600_000)).code,
    ).toBe('UNAVAILABLE')
  })
})
