import { setTimeout as sleep } from 'node:timers/promises'
import { errorCodeOf } from '@agent-state/contract'
import type { Backend } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import Keyv from 'keyv'
import { beforeAll, describe, expect, it } from 'vitest'
import { createKeyvStore } from '../src/index.js'
import { BACKENDS, describeEachBackend } from './backends.js'

const text = new TextEncoder()

describeEachBackend(
  BACKENDS,
  (name) => `Keyv store on ${name}`,
  (shared) => {
    let backend: Backend
    beforeAll(() => {
      backend = shared.backend()
    })

    it('an expired entry reads as missing and is removed from the backend on that read', async () => {
      const keyv = new Keyv({ store: createKeyvStore({ backend, prefix: 'ttl' }) })
      await keyv.set('short', 'gone soon', 30)
      await keyv.set('long', 'stays', 60_000)
      expect(await backend.head('ttl/nkeyv/kshort')).not.toBeNull()
      await sleep(60)
      // Still stored: nothing removes it before a read.
      expect(await backend.head('ttl/nkeyv/kshort')).not.toBeNull()
      expect(await keyv.get('short')).toBeUndefined()
      expect(await backend.head('ttl/nkeyv/kshort')).toBeNull()
      expect(await keyv.get('long')).toBe('stays')
      expect(await keyv.has('long')).toBe(true)
    })

    it('has() and getMany() treat an expired entry as missing', async () => {
      const store = createKeyvStore({ backend, prefix: 'ttl-many' })
      store.namespace = 'ns'
      await store.set('ns:a', 'A', 20)
      await store.set('ns:b', 'B')
      await sleep(40)
      expect(await store.has('ns:a')).toBe(false)
      expect(await store.getMany(['ns:a', 'ns:b', 'ns:c'])).toEqual([undefined, 'B', undefined])
      expect(await store.hasMany(['ns:a', 'ns:b'])).toEqual([false, true])
    })

    it('the lazy removal leaves a value rewritten after the expired read alone', async () => {
      const store = createKeyvStore({ backend, prefix: 'ttl-race' })
      store.namespace = 'ns'
      await store.set('ns:k', 'old', 10)
      await sleep(25)
      const stale = await backend.get('ttl-race/nns/kk')
      expect(stale).not.toBeNull()
      await store.set('ns:k', 'new')
      // The removal is conditional on the version the reader saw.
      await (
        store as unknown as { removeExpired(key: string, version: string): Promise<void> }
      ).removeExpired('ttl-race/nns/kk', stale?.meta.version ?? '')
      expect(await store.get('ns:k')).toBe('new')
    })

    it('clear() removes only its own namespace, nothing else on the backend', async () => {
      await backend.put('unrelated/key', text.encode('keep'))
      const a = new Keyv({ store: createKeyvStore({ backend, prefix: 'clr' }), namespace: 'a' })
      const b = new Keyv({ store: createKeyvStore({ backend, prefix: 'clr' }), namespace: 'b' })
      const other = new Keyv({
        store: createKeyvStore({ backend, prefix: 'clr2' }),
        namespace: 'a',
      })
      // "a:" and "ab" share a string prefix but not a namespace.
      const ab = new Keyv({ store: createKeyvStore({ backend, prefix: 'clr' }), namespace: 'ab' })
      await Promise.all([
        a.set('x', 1),
        a.set('y', 2),
        b.set('x', 3),
        other.set('x', 4),
        ab.set('x', 5),
      ])
      await a.clear()
      expect(await a.get('x')).toBeUndefined()
      expect(await a.get('y')).toBeUndefined()
      expect(await b.get('x')).toBe(3)
      expect(await other.get('x')).toBe(4)
      expect(await ab.get('x')).toBe(5)
      expect(await backend.head('unrelated/key')).not.toBeNull()
      const left = await backend.list({ prefix: 'clr/' })
      expect(left.entries.map((entry) => entry.key)).toEqual(['clr/nab/kx', 'clr/nb/kx'])
    })

    it('iterator() yields every live entry of one namespace, keys as Keyv passes them', async () => {
      const store = createKeyvStore({ backend, prefix: 'iter' })
      store.namespace = 'n1'
      await store.setMany([
        { key: 'n1:a/b', value: 'slash' },
        { key: 'n1:é 😀', value: 'unicode' },
        { key: 'n1:gone', value: 'x', ttl: 10 },
      ])
      store.namespace = 'n2'
      await store.set('n2:a/b', 'other namespace')
      await sleep(25)
      const seen: Array<[string, unknown]> = []
      for await (const entry of store.iterator('n1')) seen.push(entry)
      expect(seen.sort()).toEqual([
        ['n1:a/b', 'slash'],
        ['n1:é 😀', 'unicode'],
      ])
      expect(await backend.head('iter/nn1/kgone')).toBeNull()
    })

    it('deleteMany() removes every key and reports whether all existed', async () => {
      const store = createKeyvStore({ backend, prefix: 'del' })
      store.namespace = 'd'
      await store.setMany([
        { key: 'd:1', value: 1 },
        { key: 'd:2', value: 2 },
      ])
      expect(await store.deleteMany(['d:1', 'd:2'])).toBe(true)
      expect(await store.getMany(['d:1', 'd:2'])).toEqual([undefined, undefined])
      await store.set('d:3', 3)
      expect(await store.deleteMany(['d:3', 'd:4'])).toBe(false)
      expect(await store.has('d:3')).toBe(false)
    })

    it('a damaged entry is CORRUPT, never a miss', async () => {
      const store = createKeyvStore({ backend, prefix: 'bad' })
      store.namespace = 'c'
      await backend.put('bad/nc/kbroken', text.encode('{not json'))
      await backend.put('bad/nc/kfuture', text.encode('{"v":2,"e":null,"t":"s","d":"x"}'))
      expect(await errorCodeOf(store.get('c:broken'))).toBe('CORRUPT')
      expect(await errorCodeOf(store.get('c:future'))).toBe('INCOMPATIBLE_SCHEMA')
    })
  },
)

describe('Keyv store limits and options', () => {
  it('a value over the backend limit is VALUE_TOO_LARGE and nothing is stored', async () => {
    const backend = createMemoryBackend({ maxValueBytes: 256 })
    const store = createKeyvStore({ backend })
    store.namespace = 'keyv'
    expect(await errorCodeOf(store.set('keyv:big', 'x'.repeat(300)))).toBe('VALUE_TOO_LARGE')
    expect(await store.has('keyv:big')).toBe(false)
    await backend.close()
  })

  it('rejects options that are not a backend or a valid prefix', () => {
    const backend = createMemoryBackend()
    expect(() => createKeyvStore({ backend, prefix: 'trailing/' })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
    expect(() => createKeyvStore({ backend: {} as Backend })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    )
  })

  it('a key with an unpaired surrogate is INVALID_KEY', async () => {
    const store = createKeyvStore({ backend: createMemoryBackend() })
    expect(await errorCodeOf(store.set('keyv:\ud800', 'x'))).toBe('INVALID_KEY')
  })
})
