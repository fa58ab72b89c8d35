import { messageQuotingProblems } from '@agent-state/contract'
import { describe, expect, it, vi } from 'vitest'
import { createFsBackend } from '../src/index.js'
import { tempRoot } from './helpers.js'

/** Where core's `quoteForMessage` lives: the mutant below replaces it. */
const CORE_KEYS_MODULE = '../../core/src/keys.ts'

describe('keys in error messages', () => {
  it('the fs backend escapes C1 controls and bidi overrides in the keys and holders it quotes', async () => {
    expect(await messageQuotingProblems(createFsBackend({ root: tempRoot() }))).toEqual([])
  })

  it('mutant: quoting with plain JSON.stringify prints them raw, and the check reports it', async () => {
    vi.resetModules()
    vi.doMock(CORE_KEYS_MODULE, async (original) => ({
      ...(await original<Record<string, unknown>>()),
      quoteForMessage: (text: string) => JSON.stringify(text),
    }))
    try {
      const mutated = await import('../src/index.js')
      const problems = await messageQuotingProblems(mutated.createFsBackend({ root: tempRoot() }))
      expect(problems).toContainEqual(
        expect.stringMatching(/^PRECONDITION_FAILED message prints U\+0085 raw/),
      )
    } finally {
      vi.doUnmock(CORE_KEYS_MODULE)
      vi.resetModules()
    }
  })
})
