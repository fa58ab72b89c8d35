import { isAgentStateError, openBackend } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createBackendFromUrl, createMemoryBackend, memoryOptionsSchema } from '../src/index.js'

/** The error a synchronous call throws (fails the test if it throws none or a foreign one). */
function thrown(run: () => unknown) {
  let caught: unknown
  try {
    run()
  } catch (error) {
    caught = error
  }
  expect(caught, 'expected an AgentStateError').toBeDefined()
  if (!isAgentStateError(caught)) throw caught
  return caught
}

describe('memory backend options and URL', () => {
  it('opens from memory: through openBackend, with the forwarded namespace and clock', async () => {
    const backend = await openBackend('memory:', {
      namespace: 'url-test',
      clock: () => 42,
      importer: async () => ({ createBackendFromUrl }),
    })
    expect(backend.name).toBe('memory')
    expect((await backend.put('k', new Uint8Array(1))).updatedAt).toBe(42)
  })

  it('rejects any other URL with the shared INVALID_ARGUMENT shape', () => {
    for (const url of ['memory:/x', 'memory:?a=1', 'file:./x']) {
      const error = thrown(() => createBackendFromUrl(url))
      expect(error.code).toBe('INVALID_ARGUMENT')
      expect(error.message).toBe(
        `Invalid memory backend URL ${JSON.stringify(url)}: a memory backend URL is just "memory:"`,
      )
      expect(error.context).toEqual({
        backend: 'memory',
        field: 'url',
        url,
        issues: [{ field: 'url', message: 'a memory backend URL is just "memory:"' }],
      })
    }
  })

  it('rejects bad options with INVALID_ARGUMENT naming the field', () => {
    const error = thrown(() => createMemoryBackend({ namespace: '../x' }))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.message).toMatch(/^Invalid memory backend option namespace: /)
    expect(error.context).toMatchObject({ backend: 'memory', field: 'namespace' })
    for (const [bad, field] of [
      [{ maxValueBytes: 0 }, 'maxValueBytes'],
      [{ maxValueBytes: 1.5 }, 'maxValueBytes'],
      [{ clock: 5 }, 'clock'],
      [{ store: 'shared' }, 'store'],
    ] as const) {
      const failure = thrown(() => createMemoryBackend(bad as never))
      expect(failure.code, JSON.stringify(bad)).toBe('INVALID_ARGUMENT')
      expect(failure.context?.field, JSON.stringify(bad)).toBe(field)
    }
  })

  it('rejects an unknown option (a typo) instead of ignoring it', () => {
    const error = thrown(() => createMemoryBackend({ namspace: 'x' } as never))
    expect(error.code).toBe('INVALID_ARGUMENT')
    expect(error.context).toMatchObject({ backend: 'memory', field: 'options' })
    expect(JSON.stringify(error.context?.issues)).toContain('namspace')
  })

  it('applies the defaults from the schema', () => {
    expect(memoryOptionsSchema.parse({})).toEqual({
      namespace: 'default',
      maxValueBytes: 64 * 1024 * 1024,
    })
    expect(createMemoryBackend().capabilities).toEqual({
      durable: false,
      multiProcess: false,
      multiHost: false,
      leaseClock: 'host',
      crossKeyFence: true,
      maxKeyBytes: 1024,
      maxValueBytes: 64 * 1024 * 1024,
      changeNotification: { mode: 'push', maxDelayMs: 50 },
    })
  })
})
