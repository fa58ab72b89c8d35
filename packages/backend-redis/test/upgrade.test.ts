import type { Backend } from '@agent-state/core'
import { redisCli } from '@agent-state/test-services'
import { describe, expect, it } from 'vitest'
import { redisKeyLayout } from '../src/index.js'
import { deleteAs01, putAs01 } from './legacy-0.1-scripts.js'
import { privateRedisServer } from './private-server.js'

/**
 * Upgrade compatibility with 0.1 on a real redis-server. 0.1 versions are
 * `<revision>.<random>`; 0.2 versions carry the value size as a third part so
 * a listing needs one HMGET per key. Data written by 0.1, also by a 0.1 client
 * still writing after 0.2 clients started (a rolling upgrade), must list and
 * head with its true size, never a stale one.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
const privateServer = privateRedisServer()
const backend = (namespace: string) => privateServer.backend(namespace)

async function listAll(b: Backend, prefix = '') {
  const entries = []
  let cursor: string | undefined
  do {
    const page = await b.list({ prefix, limit: 2, ...(cursor === undefined ? {} : { cursor }) })
    entries.push(...page.entries)
    cursor = page.cursor
  } while (cursor !== undefined)
  return entries.map(({ key, version, size }) => ({ key, version, size }))
}

describe('upgrade from 0.1', () => {
  it('lists, heads and reads data written by 0.1 with its true size', async () => {
    const layout = redisKeyLayout('as', 'from-0-1')
    const v1 = await putAs01(privateServer.raw(), layout, 'a', 'hello', 'AAAAAAAA')
    const v2 = await putAs01(privateServer.raw(), layout, 'b/c', 'xyz', 'BBBBBBBB')
    const v3 = await putAs01(privateServer.raw(), layout, 'empty', '', 'CCCCCCCC')
    expect([v1, v2, v3]).toEqual(['1.AAAAAAAA', '1.BBBBBBBB', '1.CCCCCCCC'])
    const b = backend('from-0-1')
    expect(await listAll(b)).toEqual([
      { key: 'a', version: v1, size: 5 },
      { key: 'b/c', version: v2, size: 3 },
      { key: 'empty', version: v3, size: 0 },
    ])
    expect(await b.head('a')).toMatchObject({ version: v1, size: 5, writer: null })
    expect(await b.head('empty')).toMatchObject({ version: v3, size: 0 })
    expect((await b.get('b/c'))?.meta).toMatchObject({ version: v2, size: 3 })
    const delimited = await b.list({ delimiter: '/' })
    expect(delimited.entries.map((e) => [e.key, e.size])).toEqual([
      ['a', 5],
      ['empty', 0],
    ])
    expect(delimited.prefixes).toEqual(['b/'])
  })

  it('compare-and-set and delete accept 0.1 versions, and revisions keep growing', async () => {
    const layout = redisKeyLayout('as', 'cas-0-1')
    const old = await putAs01(privateServer.raw(), layout, 'k', 'one', 'DDDDDDDD')
    await putAs01(privateServer.raw(), layout, 'gone', 'x', 'EEEEEEEE')
    expect(await deleteAs01(privateServer.raw(), layout, 'gone')).toBe(true)
    const b = backend('cas-0-1')
    const next = await b.put('k', bytes('three'), { ifMatch: old })
    expect(next.version).toMatch(/^2\.[A-Za-z0-9_-]{8}\.5$/)
    await expect(b.put('k', bytes('x'), { ifMatch: old })).rejects.toMatchObject({
      code: 'PRECONDITION_FAILED',
    })
    // 0.1's delete bumped the revision to 2, so the re-created key starts at 3.
    const recreated = await b.put('gone', bytes('again'), { ifNoneMatch: '*' })
    expect(recreated.version).toMatch(/^3\./)
    expect(await b.delete('k', { ifMatch: next.version })).toBe(true)
    const afterDelete = await b.put('k', bytes('4'))
    expect(afterDelete.version).toMatch(/^3\./)
    expect(await listAll(b)).toEqual([
      { key: 'gone', version: recreated.version, size: 5 },
      { key: 'k', version: afterDelete.version, size: 1 },
    ])
  })

  it('a 0.1 client writing after 0.2 clients is never reported with a stale size', async () => {
    const layout = redisKeyLayout('as', 'rolling')
    const b = backend('rolling')
    const fresh = await b.put('k', bytes('x'.repeat(21)))
    expect(fresh.size).toBe(21)
    expect(fresh.version.endsWith('.21')).toBe(true)
    // A 0.1 client overwrites it: its version has no size, the stored size changes.
    const legacy = await putAs01(privateServer.raw(), layout, 'k', 'tiny', 'FFFFFFFF')
    expect(legacy).toBe('2.FFFFFFFF')
    expect(await listAll(b)).toEqual([{ key: 'k', version: legacy, size: 4 }])
    expect(await b.head('k')).toMatchObject({ version: legacy, size: 4 })
    // 0.2 writes again, then 0.1 deletes: the key is gone from the listing.
    const again = await b.put('k', bytes('ok'), { ifMatch: legacy })
    expect(await listAll(b)).toEqual([{ key: 'k', version: again.version, size: 2 }])
    expect(await deleteAs01(privateServer.raw(), layout, 'k')).toBe(true)
    expect(await listAll(b)).toEqual([])
    expect(await b.head('k')).toBeNull()
    const last = await b.put('k', bytes('back'))
    expect(Number(last.version.split('.')[0])).toBeGreaterThan(Number(again.version.split('.')[0]))
  })
})

describe('stored layout of 0.2', () => {
  it('versions carry the exact value size, for every size', async () => {
    const b = backend('sizes')
    for (const size of [0, 1, 127, 128, 65_535, 1 << 20]) {
      const key = `s/${size}`
      const meta = await b.put(key, new Uint8Array(size).fill(7))
      expect(meta.version.split('.')).toHaveLength(3)
      expect(meta.version.endsWith(`.${size}`)).toBe(true)
      expect((await b.head(key))?.size).toBe(size)
    }
    expect((await listAll(b, 's/')).map((e) => e.size)).toEqual([0, 1, 1 << 20, 127, 128, 65_535])
  })

  it('lists 0.2 data with one HMGET per key and no HSTRLEN', async () => {
    const b = backend('cheap-list')
    const keys = Array.from({ length: 50 }, (_, i) => `k${String(i).padStart(2, '0')}`)
    for (const key of keys) await b.put(key, bytes(key.repeat(3)))
    await redisCli(privateServer.server().port, ['CONFIG', 'RESETSTAT'])
    const page = await b.list({ limit: 100 })
    expect(page.entries.map((e) => [e.key, e.size])).toEqual(keys.map((k) => [k, 9]))
    const stats = await redisCli(privateServer.server().port, ['INFO', 'commandstats'])
    const calls = (command: string) =>
      Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
    expect(calls('hmget')).toBe(50)
    expect(calls('hstrlen')).toBe(0)
    expect(calls('zrange')).toBe(1)
  })

  it('delete keeps the revision without a counter bump, and never reuses a version', async () => {
    const b = backend('revisions')
    const layout = redisKeyLayout('as', 'revisions')
    const seen = new Set<string>()
    for (let i = 0; i < 5; i++) {
      const meta = await b.put('k', bytes(String(i)))
      expect(seen.has(meta.version)).toBe(false)
      seen.add(meta.version)
      expect(await b.delete('k')).toBe(true)
      expect(await privateServer.raw().hget(layout.record('k'), 'r')).toBe(String(i + 1))
    }
  })
})
