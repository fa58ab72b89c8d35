import { messageQuotingProblems } from '@agent-state/contract'
import { type RedisServer, startRedisServer } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { createRedisBackend } from '../src/index.js'

let server: RedisServer
beforeAll(async () => {
  server = await startRedisServer()
})
afterAll(async () => {
  await server.stop()
})

/** Where core's `quoteForMessage` lives: the mutant below replaces it. */
const CORE_KEYS_MODULE = '../../core/src/keys.ts'

describe('keys in error messages', () => {
  it('the redis backend escapes C1 controls and bidi overrides in the keys and holders it quotes', async () => {
    expect(
      await messageQuotingProblems(createRedisBackend({ port: server.port, namespace: 'real' })),
    ).toEqual([])
  })

  it('mutant: quoting with plain JSON.stringify prints them raw, and the check reports it', async () => {
    vi.resetModules()
    vi.doMock(CORE_KEYS_MODULE, async (original) => ({
      ...(await original<Record<string, unknown>>()),
      quoteForMessage: (text: string) => JSON.stringify(text),
    }))
    try {
      const mutated = await import('../src/index.js')
      const problems = await messageQuotingProblems(
        mutated.createRedisBackend({ port: server.port, namespace: 'mutant' }),
      )
      expect(problems).toContainEqual(
        expect.stringMatching(/^PRECONDITION_FAILED message prints U\+0085 raw/),
      )
    } finally {
      vi.doUnmock(CORE_KEYS_MODULE)
      vi.resetModules()
    }
  })
})
