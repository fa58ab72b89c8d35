import { isAgentStateError } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { describe, expect, it, vi } from 'vitest'

/** C1 control NEL and the right-to-left override: `JSON.stringify` leaves both raw. */
const UNSAFE = 'x\u0085\u202e'

async function messageOf(promise: Promise<unknown>, code: string): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  if (!isAgentStateError(error, code)) throw new Error(`expected ${code}, got ${String(error)}`)
  return error.message
}

/** The messages the runtime builds from caller-supplied text: a writer id, a key, an id. */
async function runtimeMessages(): Promise<string[]> {
  const { openSession } = await import('../src/index.js')
  const backend = createMemoryBackend({ namespace: 'quoting' })
  const a = await openSession(backend, { sessionId: 's', writer: UNSAFE, conflictPolicy: 'error' })
  const b = await openSession(backend, { sessionId: 's', writer: 'b', conflictPolicy: 'error' })
  await a.write(`k${UNSAFE}`, 'one')
  return [
    await messageOf(b.write(`k${UNSAFE}`, 'two'), 'WRITER_CONFLICT'),
    await messageOf(openSession(backend, { sessionId: UNSAFE, writer: 'c' }), 'INVALID_SESSION_ID'),
  ]
}

const RAW = /[\u0085\u202e]/

describe('caller-supplied text in runtime messages', () => {
  it('is quoted with escapes for C1 controls and bidi overrides', async () => {
    const messages = await runtimeMessages()
    for (const message of messages) {
      expect(message).not.toMatch(RAW)
      expect(message).toContain('\\u0085')
      expect(message).toContain('\\u202e')
    }
  })

  it('mutant: quoting with plain JSON.stringify prints them raw, and the check sees it', async () => {
    vi.resetModules()
    vi.doMock('../../core/src/keys.ts', async (original) => ({
      ...(await original<Record<string, unknown>>()),
      quoteForMessage: (text: string) => JSON.stringify(text),
    }))
    try {
      const messages = await runtimeMessages()
      expect(messages.filter((message) => RAW.test(message))).toHaveLength(messages.length)
    } finally {
      vi.doUnmock('../../core/src/keys.ts')
      vi.resetModules()
    }
  })
})
