import { messageQuotingProblems } from '@agent-state/contract'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createPostgresBackend } from '../src/index.js'

const server = await startPostgresServer()
afterAll(() => server.stop())

/** Where core's `quoteForMessage` lives: the mutant below replaces it. */
const CORE_KEYS_MODULE = '../../core/src/keys.ts'

describe('keys in error messages', () => {
  it('the postgres backend escapes C1 controls and bidi overrides in the keys and holders it quotes', async () => {
    const backend = createPostgresBackend({ connectionString: server.url, namespace: 'real' })
    try {
      expect(await messageQuotingProblems(backend)).toEqual([])
    } finally {
      await backend.close()
    }
  })

  it('mutant: quoting with plain JSON.stringify prints them raw, and the check reports it', async () => {
    vi.resetModules()
    vi.doMock(CORE_KEYS_MODULE, async (original) => ({
      ...(await original<Record<string, unknown>>()),
      quoteForMessage: (text: string) => JSON.stringify(text),
    }))
    try {
      const mutated = await import('../src/index.js')
      const backend = mutated.createPostgresBackend({
        connectionString: server.url,
        namespace: 'mutant',
      })
      try {
        const problems = await messageQuotingProblems(backend)
        expect(problems).toContainEqual(
          expect.stringMatching(/^PRECONDITION_FAILED message prints U\+0085 raw/),
        )
      } finally {
        await backend.close()
      }
    } finally {
      vi.doUnmock(CORE_KEYS_MODULE)
      vi.resetModules()
    }
  })
})
