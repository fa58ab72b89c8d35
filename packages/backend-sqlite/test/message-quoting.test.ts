import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { messageQuotingProblems } from '@agent-state/contract'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createSqliteBackend } from '../src/index.js'

const dir = mkdtempSync(join(tmpdir(), 'agent-state-sqlite-quoting-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Where core's `quoteForMessage` lives: the mutant below replaces it. */
const CORE_KEYS_MODULE = '../../core/src/keys.ts'

describe('keys in error messages', () => {
  it('the sqlite backend escapes C1 controls and bidi overrides in the keys and holders it quotes', async () => {
    expect(
      await messageQuotingProblems(createSqliteBackend({ path: join(dir, 'real.db') })),
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
        mutated.createSqliteBackend({ path: join(dir, 'mutant.db') }),
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
