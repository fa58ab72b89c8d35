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
})
