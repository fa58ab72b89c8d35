import { createRecordBackend } from '@agent-state/core'
import { createMemoryBackend, createMemoryRecordStore } from '@agent-state/memory'
import { describe, expect, it, vi } from 'vitest'
import { messageQuotingProblems } from '../src/index.js'

/** Where core's `quoteForMessage` lives: the mutant below replaces it. */
const CORE_KEYS_MODULE = '../../../packages/core/src/keys.ts'

describe('messageQuotingProblems', () => {
  it('finds none on the memory backend and on core record backend over memory-records', async () => {
    expect(await messageQuotingProblems(createMemoryBackend())).toEqual([])
    expect(await messageQuotingProblems(createRecordBackend(createMemoryRecordStore()))).toEqual([])
  })

  it('mutant: keys quoted with plain JSON.stringify are reported, raw characters named', async () => {
    vi.resetModules()
    vi.doMock(CORE_KEYS_MODULE, async (original) => ({
      ...(await original<Record<string, unknown>>()),
      quoteForMessage: (text: string) => JSON.stringify(text),
    }))
    try {
      const memory = await import('@agent-state/memory')
      const core = await import('@agent-state/core')
      for (const backend of [
        memory.createMemoryBackend(),
        core.createRecordBackend(memory.createMemoryRecordStore()),
      ]) {
        const problems = await messageQuotingProblems(backend)
        expect(problems).toContainEqual(
          expect.stringMatching(/^PRECONDITION_FAILED message prints U\+0085 raw/),
        )
        expect(problems).toContainEqual(expect.stringMatching(/^LEASE_HELD message prints/))
        expect(problems).toContainEqual(
          expect.stringMatching(/^LEASE_LOST message lacks the escaped key/),
        )
      }
    } finally {
      vi.doUnmock(CORE_KEYS_MODULE)
      vi.resetModules()
    }
  })
})
