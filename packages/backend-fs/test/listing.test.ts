import { setTimeout as sleep } from 'node:timers/promises'
import type { Backend } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { createFsBackend, fileNameOf } from '../src/index.js'
import {
  type DirectoryStamp,
  NameListingCache,
  racyMarginNs,
  sortNames,
} from '../src/record-name-index.js'
import { selectRecords } from '../src/scan-selection.js'
import { exitOf, startChild, tempRoot, text, untext, waitForLine } from './helpers.js'

const MS = 1_000_000n

function stamp(mtimeMs: number, ctimeMs = mtimeMs, size = 4096n): DirectoryStamp {
  return {
    dev: 1n,
    ino: 2n,
    mtimeNs: BigInt(mtimeMs) * MS + 123n,
    ctimeNs: BigInt(ctimeMs) * MS + 456n,
    size,
  }
}

const byBytes = (keys: readonly string[]): string[] =>
  [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))

/** Every key of a full walk with pages of `limit`. */
async function walk(backend: Backend, limit: number, prefix = ''): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list(
      cursor === undefined ? { prefix, limit } : { prefix, limit, cursor },
    )
    keys.push(...page.entries.map((entry) => entry.key))
    cursor = page.cursor
  } while (cursor !== undefined)
  return keys
}

describe('fs listing: the sorted-name cache', () => {
  it('trusts a listing only when the directory stamps precede its read by the racy margin', () => {
    const cache = new NameListingCache()
    const listing = sortNames(['61', '62'], () => undefined)
    const readAt = 10_000_000
    // Changed 50 ms before the read: within the 100 ms margin, so never reused.
    cache.store(listing, stamp(readAt - 50), BigInt(readAt) * MS)
    expect(cache.lookup(stamp(readAt - 50))).toBeUndefined()
    expect(cache.last()).toBe(listing)
    // Settled (500 ms before the read): reused while the stamp is exactly the same.
    cache.store(listing, stamp(readAt - 500), BigInt(readAt) * MS)
    expect(cache.lookup(stamp(readAt - 500))).toBe(listing)
    expect(cache.lookup(stamp(readAt - 499))).toBeUndefined()
    expect(cache.lookup(stamp(readAt - 500, readAt - 499))).toBeUndefined()
    expect(cache.lookup(stamp(readAt - 500, readAt - 500, 8192n))).toBeUndefined()
    expect(cache.lookup({ ...stamp(readAt - 500), ino: 3n })).toBeUndefined()
    // A recent ctime alone (a rename keeps no mtime on some systems) is racy too.
    cache.store(listing, stamp(readAt - 500, readAt - 10), BigInt(readAt) * MS)
    expect(cache.lookup(stamp(readAt - 500, readAt - 10))).toBeUndefined()
    cache.clear()
    expect(cache.last()).toBeUndefined()
  })

  it('uses a seconds-wide margin when the filesystem stamps whole seconds', () => {
    const whole = { dev: 1n, ino: 1n, mtimeNs: 5_000_000_000n, ctimeNs: 5_000_000_000n, size: 0n }
    expect(racyMarginNs(whole)).toBeGreaterThanOrEqual(2_000_000_000n)
    expect(racyMarginNs({ ...whole, mtimeNs: 5_000_000_001n })).toBeLessThan(1_000_000_000n)
    const cache = new NameListingCache()
    const listing = sortNames(['61'], () => undefined)
    // One second old is not settled on a one-second filesystem.
    cache.store(listing, whole, 6_000_000_000n)
    expect(cache.lookup(whole)).toBeUndefined()
    cache.store(listing, whole, 9_000_000_000n)
    expect(cache.lookup(whole)).toBe(listing)
  })

  it('sorts names by key bytes, drops temps and foreign names, and reuses an unchanged order', () => {
    const long = 'x'.repeat(200)
    const hashed = fileNameOf(long)
    const names = [
      fileNameOf('b'),
      '.as~tmp.1.2',
      hashed,
      'README',
      fileNameOf('a'),
      fileNameOf('\u{1F600}'),
    ]
    const listing = sortNames(names, (name) => (name === hashed ? long : undefined))
    expect(listing.temps).toBe(true)
    expect(listing.entries.map((entry) => entry.name)).toEqual([
      fileNameOf('a'),
      fileNameOf('b'),
      hashed,
      fileNameOf('\u{1F600}'),
    ])
    const again = sortNames(
      [...names].reverse(),
      (name) => (name === hashed ? long : undefined),
      listing,
    )
    expect(again.entries).toBe(listing.entries)
    const grown = sortNames(
      [...names, fileNameOf('c')],
      (name) => (name === hashed ? long : undefined),
      listing,
    )
    expect(grown.entries).not.toBe(listing.entries)
    expect(grown.entries.map((entry) => entry.name)).toContain(fileNameOf('c'))
  })

  it('selects a page by binary search: prefix, after, limit, done, odd names', () => {
    const keys = ['a', 'a/1', 'a/2', 'a/3', 'ab', 'b', '\uE000', '\u{1F600}']
    const names = [...keys.map(fileNameOf), 'ff' /* not UTF-8: skipped */]
    const { entries } = sortNames(names, () => undefined)
    const pick = (options: { prefix: string; after?: string; limit: number }) => {
      const selection = selectRecords(entries, options)
      return { keys: selection.picked.map((record) => record.key), done: selection.done }
    }
    expect(pick({ prefix: '', limit: 100 })).toEqual({ keys: byBytes(keys), done: true })
    expect(pick({ prefix: 'a/', limit: 2 })).toEqual({ keys: ['a/1', 'a/2'], done: false })
    expect(pick({ prefix: 'a/', after: 'a/2', limit: 2 })).toEqual({ keys: ['a/3'], done: true })
    expect(pick({ prefix: 'a', after: 'a/\u{10FFFF}', limit: 5 })).toEqual({
      keys: ['ab'],
      done: true,
    })
    expect(pick({ prefix: '', after: '\uE000', limit: 5 })).toEqual({
      keys: ['\u{1F600}'],
      done: true,
    })
    // A forged cursor with a lone surrogate is compared key by key.
    expect(pick({ prefix: '', after: 'b\uD800', limit: 5 })).toEqual({
      keys: ['\uE000', '\u{1F600}'],
      done: true,
    })
    expect(pick({ prefix: '\uD800', limit: 5 })).toEqual({ keys: [], done: true })
    expect(pick({ prefix: 'zz', limit: 5 })).toEqual({ keys: [], done: true })
  })
})

describe('fs listing across instances and processes', () => {
  it('walks a few thousand keys in pages, identical with and without the cache', async () => {
    const root = tempRoot()
    const writer = createFsBackend({ root, fsync: false })
    const keys = Array.from(
      { length: 3000 },
      (_, i) => `k/${(i * 7919) % 3001}/v${'é'.repeat(i % 3)}`,
    )
    for (const key of keys) await writer.put(key, text(key))
    await writer.put('other', text('x'))
    await sleep(150) // past the racy margin: later pages reuse the cached names
    const cached = createFsBackend({ root })
    const uncached = createFsBackend({ root, listCache: false })
    const expected = byBytes(keys)
    for (let round = 0; round < 2; round++) {
      expect(await walk(cached, 250, 'k/')).toEqual(expected)
      expect(await walk(uncached, 250, 'k/')).toEqual(expected)
    }
    const page = await cached.list({ prefix: 'k/', limit: 3, delimiter: '/' })
    expect(page.prefixes).toEqual(
      byBytes([...new Set(keys.map((key) => `k/${key.split('/')[1]}/`))]).slice(0, 3),
    )
    for (const backend of [writer, cached, uncached]) await backend.close()
  }, 60_000)

  it('shows a key another instance creates or deletes at once, also right after a cached page', async () => {
    const root = tempRoot()
    const lister = createFsBackend({ root })
    const writer = createFsBackend({ root })
    await writer.put('seed', text('x'))
    await sleep(150)
    expect((await lister.list()).entries.map((entry) => entry.key)).toEqual(['seed'])
    const expected = ['seed']
    for (let i = 0; i < 60; i++) {
      const key = `new/${String(i).padStart(3, '0')}`
      await writer.put(key, text(String(i)))
      expected.push(key)
      // No pause: the change lands within the same timestamp tick as often as the clock allows.
      expect((await lister.list()).entries.map((entry) => entry.key)).toEqual(byBytes(expected))
      if (i % 10 === 9) {
        await sleep(120) // let the listing settle so the next check starts from a trusted cache
        await lister.list()
      }
    }
    await writer.delete('new/000')
    expect(
      (await lister.list({ prefix: 'new/', limit: 1 })).entries.map((entry) => entry.key),
    ).toEqual(['new/001'])
    await writer.destroy?.()
    expect((await lister.list()).entries).toEqual([])
    await writer.put('after-destroy', text('y'))
    expect((await lister.list()).entries.map((entry) => entry.key)).toEqual(['after-destroy'])
    await lister.close()
    await writer.close()
  }, 60_000)

  it("shows another process's new key on the next list, after a settled cached listing", async () => {
    const root = tempRoot()
    const lister = createFsBackend({ root, namespace: 'shared' })
    await lister.put('mine', text('x'))
    await sleep(150)
    expect((await lister.list()).entries.map((entry) => entry.key)).toEqual(['mine'])
    expect((await lister.list()).entries.map((entry) => entry.key)).toEqual(['mine'])
    const child = startChild('put-keys.ts', [root, 'shared', 'theirs/1', 'theirs/2'])
    await waitForLine(child, 'done')
    expect(await exitOf(child)).toBe(0)
    const page = await lister.list()
    expect(page.entries.map((entry) => entry.key)).toEqual(['mine', 'theirs/1', 'theirs/2'])
    expect(untext((await lister.get('theirs/2'))?.value ?? new Uint8Array())).toBe('child theirs/2')
    await lister.close()
  }, 30_000)

  it('lists every key present for the whole walk exactly once while others write', async () => {
    const root = tempRoot()
    const seed = createFsBackend({ root, fsync: false })
    const stable = Array.from({ length: 1500 }, (_, i) => `s/${String(i * 2).padStart(5, '0')}`)
    for (const key of stable) await seed.put(key, text('v'))
    await sleep(150)
    const lister = createFsBackend({ root })
    const writer = createFsBackend({ root, fsync: false })
    let writing = true
    const churn = (async () => {
      let i = 0
      while (writing) {
        // New keys between the stable ones, overwrites of stable ones, deletes of new ones.
        await writer.put(`s/${String(i * 2 + 1).padStart(5, '0')}`, text('n'))
        await writer.put(stable[(i * 37) % stable.length] as string, text(`o${i}`))
        if (i > 3) await writer.delete(`s/${String((i - 3) * 2 + 1).padStart(5, '0')}`)
        i++
        await sleep(0)
      }
    })()
    try {
      for (let round = 0; round < 3; round++) {
        const seen = await walk(lister, 97, 's/')
        expect(seen).toEqual(byBytes(seen))
        expect(new Set(seen).size).toBe(seen.length)
        const present = new Set(seen)
        expect(stable.filter((key) => !present.has(key))).toEqual([])
      }
    } finally {
      writing = false
      await churn
    }
    for (const backend of [seed, lister, writer]) await backend.close()
  }, 60_000)

  it('keeps writing durably after another instance destroyed and recreated the namespace', async () => {
    const root = tempRoot()
    const a = createFsBackend({ root })
    const b = createFsBackend({ root })
    await a.put('k', text('1')) // opens a's records directory descriptor
    await b.destroy?.()
    await b.put('from-b', text('b')) // recreates the directories
    await a.put('k', text('2')) // a's descriptor is of the removed directory: reopened
    const c = createFsBackend({ root })
    expect(untext((await c.get('k'))?.value ?? new Uint8Array())).toBe('2')
    expect((await c.list()).entries.map((entry) => entry.key)).toEqual(['from-b', 'k'])
    for (const backend of [a, b, c]) await backend.close()
  })
})
