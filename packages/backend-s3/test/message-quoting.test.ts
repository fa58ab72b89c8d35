import { messageQuotingProblems } from '@agent-state/contract'
import { describe, expect, it, vi } from 'vitest'
import { freshNamespace, openTestBackend, s3Config } from './s3-config.js'

/** Where core's `quoteForMessage` lives: the mutant below replaces it. */
const CORE_KEYS_MODULE = '../../core/src/keys.ts'

describe('keys in error messages', () => {
  it('the s3 backend escapes C1 controls and bidi overrides in the keys and holders it quotes', async () => {
    expect(await messageQuotingProblems(openTestBackend(freshNamespace()))).toEqual([])
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
        mutated.createS3Backend({ ...s3Config(), namespace: freshNamespace() }),
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
