import { describe, expect, it } from 'vitest'
import {
  type Backend,
  GET_MANY_CONCURRENCY,
  getMany,
  isAgentStateError,
  MAX_GET_MANY_KEYS,
  MAX_KEY_BYTES,
  type StoredValue,
} from '../src/index.js'

/** The part of a backend `getMany` uses, over a map, counting its reads and their overlap. */
function mapBackend(entries: Record<string, string>, native?: Backend['getMany']) {
  const reads: string[] = []
  let running = 0
  let most = 0
  const backend: Pick<Backend, 'get' | 'getMany' | 'capabilities'> = {
    capabilities: {
      durable: false,
      multiProcess: false,
      multiHost: false,
      leaseClock: 'host',
      maxKeyBytes: MAX_KEY_BYTES,
      maxValueBytes: 1024,
    },
    async get(key) {
      reads.push(key)
      running++
      most = Math.max(most, running)
      await new Promise((resolve) => setTimeout(resolve, 1))
      running--
      const text = entries[key]
      if (text === undefined) return null
      const value = new TextEncoder().encode(text)
      return {
        value,
        meta: { key, version: `v-${key}`, size: value.byteLength, writer: null, updatedAt: 1 },
      }
    },
    ...(native === undefined ? {} : { getMany: native }),
  }
  return { backend, reads, most: () => most }
}

const text = (entry: StoredValue | null) =>
  entry === null ? null : new TextDecoder().decode(entry.value)

async function codeOf(call: Promise<unknown>): Promise<string> {
  try {
    await call
  } catch (error) {
    return isAgentStateError(error) ? error.code : String(error)
  }
  return 'resolved'
}

describe('getMany without a native method', () => {
  it('answers in the order of the keys, null for a missing key, one read per distinct key', async () => {
    const { backend, reads } = mapBackend({ a: 'A', b: 'B', '😀': 'smile' })
    const got = await getMany(backend, ['b', 'missing', '😀', 'a', 'b'])
    expect(got.map(text)).toEqual(['B', null, 'smile', 'A', 'B'])
    expect(got[1]).toBeNull()
    expect([...reads].sort()).toEqual(['a', 'b', 'missing', '😀'])
    // A duplicate is a copy: mutating one entry leaves the other as read.
    got[0]?.value.fill(0)
    expect(text(got[4] ?? null)).toBe('B')
    expect(await getMany(backend, [])).toEqual([])
  })

  it(`keeps at most ${GET_MANY_CONCURRENCY} gets in flight, or the concurrency asked`, async () => {
    const keys = Array.from({ length: 100 }, (_, i) => `k/${i}`)
    const { backend, reads, most } = mapBackend({})
    expect(await getMany(backend, keys)).toEqual(keys.map(() => null))
    expect(reads).toHaveLength(100)
    expect(most()).toBe(GET_MANY_CONCURRENCY)
    const few = mapBackend({})
    await getMany(few.backend, keys, { concurrency: 3 })
    expect(few.most()).toBe(3)
  })

  it('checks every key and the bound before reading anything', async () => {
    const { backend, reads } = mapBackend({ a: 'A' })
    expect(await codeOf(getMany(backend, ['a', 'b', '']))).toBe('INVALID_KEY')
    expect(await codeOf(getMany(backend, ['a', 7 as unknown as string]))).toBe('INVALID_KEY')
    const tooMany = Array.from({ length: MAX_GET_MANY_KEYS + 1 }, () => 'a')
    expect(await codeOf(getMany(backend, tooMany))).toBe('INVALID_ARGUMENT')
    expect(await codeOf(getMany(backend, 'a' as unknown as string[]))).toBe('INVALID_ARGUMENT')
    expect(reads).toEqual([])
    expect(await getMany(backend, tooMany.slice(1))).toHaveLength(MAX_GET_MANY_KEYS)
  })
})

describe('getMany with a native method', () => {
  it('uses it, after the same checks', async () => {
    const calls: (readonly string[])[] = []
    const { backend, reads } = mapBackend({}, async (keys) => {
      calls.push(keys)
      return keys.map(() => null)
    })
    expect(await getMany(backend, ['x', 'y'])).toEqual([null, null])
    expect(calls).toEqual([['x', 'y']])
    expect(await getMany(backend, [])).toEqual([])
    expect(await codeOf(getMany(backend, ['x', '']))).toBe('INVALID_KEY')
    expect(calls).toHaveLength(1)
    expect(reads).toEqual([])
  })
})
