import { describe, expect, it } from 'vitest'
import { createMemoryBackend, createMemoryStore } from '../src/index.js'

// The memory backend's contract conformance is proven in test-suites/contract
// (the suite's own reference run, which also uses this package for its
// mutants, so this package cannot depend on the suite). These tests cover
// what is memory-specific.

const bytes = (text: string) => new TextEncoder().encode(text)

describe('memory backend instances', () => {
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

  it('hands out disjoint copies: mutating one read changes no other read (small and large values)', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore() })
    for (const size of [1, 1024, 4096, 4097, 100_000]) {
      const stored = new Uint8Array(size).fill(7)
      await backend.put('k', stored)
      const first = (await backend.get('k'))?.value as Uint8Array
      const second = (await backend.get('k'))?.value as Uint8Array
      first.fill(1)
      expect(second).toEqual(stored)
      expect((await backend.get('k'))?.value).toEqual(stored)
      second.fill(2)
      expect(first.every((byte) => byte === 1)).toBe(true)
    }
  })

  it('fails with CLOSED after close', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore() })
    await backend.close()
    await expect(backend.get('k')).rejects.toMatchObject({ code: 'CLOSED' })
  })
})
