import { isAgentStateError, openBackend } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createBackendFromUrl, createMemoryBackend, createMemoryStore } from '../src/index.js'
import { indexAfter } from '../src/memory-store.js'

// The memory backend's contract conformance is proven in test-suites/contract
// (the suite's own reference run). These tests cover what is memory-specific.

const bytes = (text: string) => new TextEncoder().encode(text)

describe('memory backend', () => {
  it('shares keys between instances on one store and isolates namespaces', async () => {
    const store = createMemoryStore()
    const a = createMemoryBackend({ store, namespace: 'one' })
    const b = createMemoryBackend({ store, namespace: 'one' })
    const other = createMemoryBackend({ store, namespace: 'two' })
    await a.put('k', bytes('v'))
    expect((await b.get('k'))?.value).toEqual(bytes('v'))
    expect(await other.get('k')).toBeNull()
  })

  it('keeps its own copy of values', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore() })
    const value = bytes('abc')
    await backend.put('k', value)
    value[0] = 0
    const read = await backend.get('k')
    expect(read?.value).toEqual(bytes('abc'))
    read?.value.fill(0)
    expect((await backend.get('k'))?.value).toEqual(bytes('abc'))
  })

  it('opens from memory: through openBackend', async () => {
    const backend = await openBackend('memory:', {
      namespace: 'url-test',
      importer: async () => ({ createBackendFromUrl }),
    })
    expect(backend.name).toBe('memory')
    expect(() => createBackendFromUrl('memory:/x')).toThrow(/memory:/)
  })

  it('rejects bad options with INVALID_ARGUMENT', () => {
    try {
      createMemoryBackend({ namespace: '../x' })
      expect.unreachable()
    } catch (error) {
      expect(isAgentStateError(error, 'INVALID_ARGUMENT')).toBe(true)
    }
  })

  it('fails with CLOSED after close', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore() })
    await backend.close()
    await expect(backend.get('k')).rejects.toMatchObject({ code: 'CLOSED' })
  })
})

describe('indexAfter', () => {
  const sorted = ['a', 'b', 'b/c', 'é', '\uE000', '😀']
  it('finds the first key after a bound in byte order', () => {
    expect(indexAfter(sorted, 'b')).toBe(2)
    expect(indexAfter(sorted, 'b', true)).toBe(1)
    expect(indexAfter(sorted, '\uFFFF')).toBe(5)
    expect(indexAfter(sorted, '')).toBe(0)
    expect(indexAfter(sorted, '😀')).toBe(6)
  })
})
