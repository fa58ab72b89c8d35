import { ABSENT_STATE, type KeyState, sortUtf8 } from '@agent-state/core'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createMemoryBackend, createMemoryStore } from '../src/index.js'
import { indexAfter, type MemoryNamespace, setState } from '../src/memory-store.js'

const bytes = (text: string) => new TextEncoder().encode(text)

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

/** Units where UTF-16 and byte order disagree (surrogates against U+E000–U+FFFF), and `/`. */
const keyUnit = fc.constantFrom(
  'a',
  'b',
  '/',
  'é',
  '\ue000',
  '\uffff',
  '😀',
  '\u{10000}',
  '\u{10ffff}',
)
const anyKey = fc.array(keyUnit, { minLength: 1, maxLength: 6 }).map((units) => units.join(''))

describe('the lazily sorted key index', () => {
  type Step = { create: string[] } | 'read' | { rewrite: number }
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.record({ create: fc.array(anyKey, { maxLength: 12 }) }),
    fc.constant('read' as const),
    fc.record({ rewrite: fc.nat() }),
  )

  it('lists every key once, in byte order, whatever the mix of creates, rewrites and reads', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), (steps) => {
        const ns: MemoryNamespace = createMemoryStore().namespace('n')
        const state = ABSENT_STATE as KeyState
        for (const s of steps) {
          if (s === 'read') expect(ns.sortedKeys).toEqual(sortUtf8(ns.states.keys()))
          else if ('create' in s) for (const key of s.create) setState(ns, key, state)
          else {
            const keys = [...ns.states.keys()]
            const key = keys[s.rewrite % Math.max(keys.length, 1)]
            if (key !== undefined) setState(ns, key, state)
          }
        }
        expect(ns.sortedKeys).toEqual(sortUtf8(ns.states.keys()))
        expect(ns.sortedKeys).toBe(ns.sortedKeys)
      }),
      { numRuns: 3_000 },
    )
  })

  it('merges thousands of creates into a large index', () => {
    const ns = createMemoryStore().namespace('n')
    const state = ABSENT_STATE as KeyState
    const keyOf = (i: number) => `k/${(i * 7919) % 100_003}`
    for (let i = 0; i < 20_000; i++) setState(ns, keyOf(i), state)
    expect(ns.sortedKeys.length).toBe(20_000)
    for (let i = 20_000; i < 30_000; i++) setState(ns, keyOf(i), state)
    setState(ns, 'a', state)
    setState(ns, 'z😀', state)
    expect(ns.sortedKeys).toEqual(sortUtf8(ns.states.keys()))
  })

  it('keeps an eager index for a namespace from a caller-made store', () => {
    const ns: MemoryNamespace = { states: new Map(), sortedKeys: [] }
    for (const key of ['b', '😀', '\uffff', 'a']) setState(ns, key, ABSENT_STATE as KeyState)
    expect(ns.sortedKeys).toEqual(['a', 'b', '\uffff', '😀'])
  })

  it('pages every key that exists throughout exactly once while others are created and deleted', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(anyKey, { minLength: 1, maxLength: 40 }),
        fc.array(fc.array(anyKey, { maxLength: 5 }), { maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('', 'a', '😀'),
        async (stable, churn, limit, prefix) => {
          const store = createMemoryStore()
          const backend = createMemoryBackend({ store })
          const writer = createMemoryBackend({ store })
          const valid = stable.filter(
            (key) => !key.startsWith('/') && !key.endsWith('/') && !key.includes('//'),
          )
          for (const key of valid) await backend.put(key, bytes(key))
          const seen: string[] = []
          let cursor: string | undefined
          for (let page = 0; ; page++) {
            const result = await backend.list(
              cursor === undefined ? { prefix, limit } : { prefix, limit, cursor },
            )
            seen.push(...result.entries.map((entry) => entry.key))
            for (const key of churn[page] ?? []) {
              const name = `${key}/new`
              if (name.startsWith('/') || name.includes('//')) continue
              if (valid.includes(name)) continue
              await writer.put(name, bytes('x'))
              if (key.length % 2 === 0) await writer.delete(name)
            }
            cursor = result.cursor
            if (cursor === undefined) break
          }
          expect(seen).toEqual(sortUtf8(new Set(seen)))
          const expected = sortUtf8(valid.filter((key) => key.startsWith(prefix)))
          expect(seen.filter((key) => valid.includes(key))).toEqual(expected)
        },
      ),
      { numRuns: 500 },
    )
  })
})
