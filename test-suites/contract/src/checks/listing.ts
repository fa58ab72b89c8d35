import { bytes, ensure, ensureEqual, ensureSame, fail, rejectsWith } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import { byteCompare, listAll } from './list-all.js'

/** Listing order, prefixes, pagination and delimiter. */
export const listingChecks: ContractCheck[] = [
  check('listing', 'byte order and prefix semantics', async (h) => {
    const b = await h.backend()
    const keys = ['fo', 'foo/x', 'foo', 'fob', 'f', 'fp', 'Fo', 'fo/a/b', 'g']
    for (const key of keys) await b.put(key, bytes(key))
    ensureSame(await listAll(b, {}), [...keys].sort(byteCompare), 'full listing')
    const fo = keys.filter((k) => k.startsWith('fo')).sort(byteCompare)
    ensureSame(await listAll(b, { prefix: 'fo' }), fo, 'prefix "fo" listing')
    ensureSame(await listAll(b, { prefix: 'nothing' }), [], 'prefix with no match')
    const page = await b.list({ prefix: 'fo' })
    for (const entry of page.entries) {
      ensure(
        typeof entry.version === 'string' && entry.version.length > 0,
        'entries carry versions',
      )
      const head = await b.head(entry.key)
      ensureEqual(entry.version, head?.version, `listed version of ${entry.key} matches head`)
      if (entry.size !== undefined) ensureEqual(entry.size, head?.size, 'listed size')
      if (entry.updatedAt !== undefined) {
        ensureEqual(entry.updatedAt, head?.updatedAt, `listed updatedAt of ${entry.key}`)
      }
    }
  }),

  check(
    'listing',
    'the default limit is 1000 and a walk over more keys sees each once',
    async (h) => {
      const b = await h.backend()
      const total = 1003
      const keys = Array.from({ length: total }, (_, i) => `big/${String(i).padStart(4, '0')}`)
      // Written in parallel batches: 1003 sequential round trips are slow on remote stores.
      for (let i = 0; i < keys.length; i += 50) {
        await Promise.all(keys.slice(i, i + 50).map((key) => b.put(key, bytes('v'))))
      }
      h.report({ keys: total })
      const first = await b.list({ prefix: 'big/' })
      ensureEqual(first.entries.length, 1000, 'entries of a page without a limit (default 1000)')
      ensure(first.cursor !== undefined, 'a full default page carries a cursor')
      ensureSame(
        first.entries.map((e) => e.key),
        keys.slice(0, 1000),
        'the first default page',
      )
      const rest = await b.list({ prefix: 'big/', cursor: first.cursor })
      ensureSame(
        rest.entries.map((e) => e.key),
        keys.slice(1000),
        'the page after the default one',
      )
      ensureEqual(rest.cursor, undefined, 'no cursor after the last page')
      ensureSame(await listAll(b, {}), keys, 'a walk with the default limit sees each key once')
      const grouped = await b.list({ delimiter: '/' })
      ensureSame(grouped.prefixes, ['big/'], 'one group for 1003 keys')
      ensureEqual(grouped.entries.length, 0, 'no entries beside the group')
    },
    { timeoutMs: 120_000 },
  ),

  check('listing', 'delimiter without a prefix groups from the root', async (h) => {
    const b = await h.backend()
    const keys = ['a', 'b/1', 'b/2', 'b/c/3', 'c/d/e', 'é/x', 'z', '😀/1', '\uE000']
    for (const key of keys) await b.put(key, bytes(key))
    const page = await b.list({ delimiter: '/' })
    ensureSame(
      page.entries.map((e) => e.key),
      ['a', 'z', '\uE000'],
      'entries at the root',
    )
    ensureSame(page.prefixes, ['b/', 'c/', 'é/', '😀/'], 'groups at the root')
    for (const limit of [1, 2, 3]) {
      ensureSame(
        await listAll(b, { delimiter: '/', limit }),
        ['a', 'b/', 'c/', 'z', 'é/', '\uE000', '😀/'],
        `root groups in pages of ${limit}`,
      )
    }
  }),

  check('listing', 'limit and exclusive cursor visit every key exactly once', async (h) => {
    const b = await h.backend()
    const keys = Array.from({ length: 23 }, (_, i) => `p/${String(i).padStart(3, '0')}`)
    for (const key of keys) await b.put(key, bytes('v'))
    for (const limit of [1, 2, 5, 7, 23, 24, 1000]) {
      const seen: string[] = []
      let cursor: string | undefined
      for (let pages = 0; pages < 100; pages++) {
        const page = await b.list(cursor === undefined ? { limit } : { limit, cursor })
        ensure(page.entries.length <= limit, `page of limit ${limit} holds ${page.entries.length}`)
        if (page.cursor !== undefined && page.entries.length > 0) {
          ensure(page.entries.length === limit, `a non-final page of limit ${limit} is full`)
        }
        seen.push(...page.entries.map((e) => e.key))
        if (page.cursor === undefined) break
        cursor = page.cursor
      }
      ensureSame(seen, keys, `walking pages of ${limit}`)
    }
    const first = await b.list({ limit: 3 })
    ensureSame(
      first.entries.map((e) => e.key),
      keys.slice(0, 3),
      'first page',
    )
    ensure(first.cursor !== undefined, 'a full page carries a cursor')
    const second = await b.list({ limit: 3, cursor: first.cursor })
    ensureSame(
      second.entries.map((e) => e.key),
      keys.slice(3, 6),
      'cursor is exclusive',
    )
  }),

  check('listing', 'deleted keys are never listed', async (h) => {
    const b = await h.backend()
    for (let i = 0; i < 10; i++) await b.put(`d/${i}`, bytes('v'))
    for (let i = 0; i < 10; i += 2) await b.delete(`d/${i}`)
    ensureSame(
      await listAll(b, { prefix: 'd/' }),
      ['d/1', 'd/3', 'd/5', 'd/7', 'd/9'],
      'after deletes',
    )
    ensureSame(
      await listAll(b, { prefix: 'd/', limit: 1 }),
      ['d/1', 'd/3', 'd/5', 'd/7', 'd/9'],
      'paged',
    )
    // Deleted keys that once had a lease keep a record (their fencing counter) on record
    // backends, so a scan batch can end on them with nothing listed: the next scan must restart
    // right after the last one, not skip the live keys that extend it (`e/k` → `e/k/1`).
    for (const key of ['e/j', 'e/k']) {
      await b.put(key, bytes('v'))
      const lease = await b.acquireLease(key, { holder: 'h', ttlMs: 60_000 })
      await b.releaseLease(lease)
      await b.delete(key)
    }
    await b.put('e/k/1', bytes('v'))
    for (const limit of [1, 2]) {
      ensureSame(
        await listAll(b, { prefix: 'e/', limit }),
        ['e/k/1'],
        `a page of ${limit} after deleted keys that a live key extends`,
      )
    }
    for (let i = 0; i < 10; i++) await b.delete(`d/${i}`)
    await b.delete('e/k/1')
    ensureSame(await listAll(b, {}), [], 'all deleted')
    const empty = await b.list({ limit: 1 })
    ensureEqual(empty.entries.length, 0, 'no entries once all are deleted')
  }),

  check('listing', 'delimiter groups prefixes in byte order with pagination', async (h) => {
    const b = await h.backend()
    const keys = [
      'r/a',
      'r/b/1',
      'r/b/2',
      'r/c',
      'r/d/x/y',
      'r/e',
      'r/é/1',
      'r/😀/1',
      'r/\uE000',
      'rz',
    ]
    for (const key of keys) await b.put(key, bytes('v'))
    const expected = ['r/a', 'r/b/', 'r/c', 'r/d/', 'r/e', 'r/é/', 'r/\uE000', 'r/😀/'].sort(
      byteCompare,
    )
    const one = await b.list({ prefix: 'r/', delimiter: '/' })
    ensureSame(
      one.entries.map((e) => e.key),
      ['r/a', 'r/c', 'r/e', 'r/\uE000'],
      'entries with delimiter',
    )
    ensureSame(one.prefixes, ['r/b/', 'r/d/', 'r/é/', 'r/😀/'], 'prefixes with delimiter')
    for (const limit of [1, 2, 3]) {
      ensureSame(
        await listAll(b, { prefix: 'r/', delimiter: '/', limit }),
        expected,
        `delimiter pages of ${limit}`,
      )
    }
    ensureSame(
      await listAll(b, { prefix: 'r/b', delimiter: '/' }),
      ['r/b/'],
      'prefix inside a group name',
    )
    ensureSame(
      await listAll(b, { prefix: 'r/b/', delimiter: '/' }),
      ['r/b/1', 'r/b/2'],
      'inside a group',
    )
  }),

  check('listing', 'a bad cursor is INVALID_ARGUMENT', async (h) => {
    const b = await h.backend()
    await b.put('k', bytes('v'))
    await rejectsWith(
      b.list({ cursor: 'not a cursor!' }),
      'INVALID_ARGUMENT',
      'list with a garbage cursor',
    )
    // Well-formed base64url JSON of the wrong shape: decoding alone must not make a cursor.
    for (const forged of [
      '{}',
      'null',
      '[]',
      '"k"',
      '{"v":2,"a":"k","g":0}',
      '{"v":1,"a":5,"g":0}',
      '{"v":1,"a":"k","g":2}',
      '{"v":1,"g":0}',
      '{"v":1,"a":"k"}',
    ]) {
      await rejectsWith(
        b.list({ cursor: Buffer.from(forged, 'utf8').toString('base64url') }),
        'INVALID_ARGUMENT',
        `list with a forged cursor ${forged}`,
      )
    }
    await rejectsWith(b.list({ limit: 0 }), 'INVALID_ARGUMENT', 'list with limit 0')
    await rejectsWith(b.list({ limit: 1.5 }), 'INVALID_ARGUMENT', 'list with a fractional limit')
    await rejectsWith(b.list({ limit: 10_001 }), 'INVALID_ARGUMENT', 'list with limit above 10 000')
  }),

  check(
    'listing',
    'keys present for the whole walk appear exactly once under concurrent writes',
    async (h) => {
      const b = await h.backend()
      const writers = await Promise.all([h.backend(), h.backend(), h.backend()])
      const stable = Array.from({ length: 60 }, (_, i) => `w/${String(i * 2).padStart(3, '0')}`)
      for (const key of stable) await b.put(key, bytes('stable'))
      let stop = false
      const churn = writers.map(async (w, n) => {
        let i = 0
        while (!stop) {
          const key = `w/${String(((i * 7 + n * 13) % 121) | 1).padStart(3, '0')}${i % 3 === 0 ? '/deep' : ''}`
          if (i % 2 === 0) await w.put(key, bytes('churn'))
          else await w.delete(key)
          i++
          await new Promise((resolve) => setImmediate(resolve))
        }
      })
      try {
        for (let round = 0; round < 5; round++) {
          const seen = await listAll(b, { prefix: 'w/', limit: 4 })
          for (const key of stable) {
            const count = seen.filter((k) => k === key).length
            if (count !== 1) fail(`round ${round}: stable key ${key} listed ${count} times`)
          }
          if (new Set(seen).size !== seen.length) fail(`round ${round}: a key was listed twice`)
        }
      } finally {
        stop = true
        await Promise.all(churn)
      }
    },
    // Five full walks in pages of 4 while three writers churn: slow stores (S3, the
    // test-only file store) legitimately need more than vitest's default.
    { timeoutMs: 120_000 },
  ),
]
