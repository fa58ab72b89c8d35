import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import type { NormalizedListOptions } from '../src/arguments.js'
import type { ListEntry, ListPage } from '../src/backend.js'
import { compareUtf8, sortUtf8 } from '../src/byte-order.js'
import { type CursorPosition, decodeCursor, encodeCursor } from '../src/cursor.js'
import { collectListPage, type ScanBatch, type ScanFunction } from '../src/list-page.js'

/**
 * The previous `collectListPage` (a `compareUtf8` call per entry and a
 * position object per entry), kept as the oracle: the current one must build
 * the same pages and ask the scan the same questions, also when the scan
 * breaks its contract.
 */
async function oracleCollectListPage(
  options: NormalizedListOptions,
  scan: ScanFunction,
): Promise<ListPage> {
  const { prefix, limit, delimiter } = options
  const entries: ListEntry[] = []
  const prefixes: string[] = []
  let emitted = options.position
  let scanFrom = options.position
  let count = 0
  const finish = (next: CursorPosition | undefined): ListPage => {
    const page: { entries: ListEntry[]; prefixes?: string[]; cursor?: string } = { entries }
    if (delimiter !== undefined) page.prefixes = prefixes
    if (next !== undefined) page.cursor = encodeCursor(next)
    return page
  }
  for (;;) {
    const batch = await scan(scanFrom, Math.min(limit - count + 1, 1000))
    for (const entry of batch.entries) {
      if (emitted?.group === true && entry.key.startsWith(emitted.after)) continue
      if (emitted !== undefined && compareUtf8(entry.key, emitted.after) <= 0) continue
      if (!entry.key.startsWith(prefix)) continue
      if (count === limit) return finish(emitted)
      const cut = delimiter === undefined ? -1 : entry.key.indexOf(delimiter, prefix.length)
      if (cut >= 0) {
        const group = entry.key.slice(0, cut + 1)
        prefixes.push(group)
        emitted = { after: group, group: true }
      } else {
        entries.push(entry)
        emitted = { after: entry.key, group: false }
      }
      count++
    }
    if (batch.done) return finish(undefined)
    if (count === limit) return finish(emitted)
    scanFrom = emitted
    if (
      batch.examinedUpTo !== undefined &&
      (scanFrom === undefined || compareUtf8(batch.examinedUpTo, scanFrom.after) > 0)
    ) {
      scanFrom = { after: batch.examinedUpTo, group: false }
    }
  }
}

const entryOf = (key: string): ListEntry => ({ key, version: `v-${key}`, size: key.length })

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
const key = fc.array(keyUnit, { minLength: 1, maxLength: 6 }).map((units) => units.join(''))

/**
 * A listing case: the store's keys, which of them the scan hides, the prefix,
 * the page limit and the delimiter (the arguments of the property tests, in this order).
 */
const listingCase = [
  fc.uniqueArray(key, { maxLength: 40 }),
  fc.array(fc.boolean(), { maxLength: 40 }),
  fc.constantFrom('', 'a', 'a/', 'é', '😀'),
  fc.integer({ min: 1, max: 7 }),
  fc.constantFrom('/' as const, undefined),
] as const

/** A scan over a correct store: `keys` sorted in byte order, `hidden` ones examined but not returned. */
function correctScan(
  sorted: readonly string[],
  hidden: ReadonlySet<string>,
  prefix: string,
  calls: unknown[],
): ScanFunction {
  return async (position, max) => {
    calls.push({ position, max })
    const bound = position?.group === true ? `${position.after}\u{10ffff}` : position?.after
    const after = sorted.filter(
      (k) => k.startsWith(prefix) && (bound === undefined || compareUtf8(k, bound) > 0),
    )
    const examined = after.slice(0, max)
    const batch: ScanBatch = {
      entries: examined.filter((k) => !hidden.has(k)).map(entryOf),
      done: examined.length === after.length,
    }
    const last = examined[examined.length - 1]
    return last === undefined ? batch : { ...batch, examinedUpTo: last }
  }
}

/** What a whole listing must return: every visible key under the prefix once, groups folded. */
function model(
  sorted: readonly string[],
  hidden: ReadonlySet<string>,
  prefix: string,
  delimiter: '/' | undefined,
) {
  const entries: string[] = []
  const prefixes: string[] = []
  for (const k of sorted) {
    if (!k.startsWith(prefix) || hidden.has(k)) continue
    const cut = delimiter === undefined ? -1 : k.indexOf(delimiter, prefix.length)
    if (cut < 0) entries.push(k)
    else if (prefixes[prefixes.length - 1] !== k.slice(0, cut + 1))
      prefixes.push(k.slice(0, cut + 1))
  }
  return { entries, prefixes }
}

/**
 * Walks a whole listing of `sorted` page by page, each page built by
 * `pageOf(options, scan)` over a correct scan (what a property test checks of
 * one page goes there), then checks the walk: it ends, and it saw exactly
 * the model's entries and groups.
 */
async function walkMatchesModel(
  sorted: readonly string[],
  hidden: ReadonlySet<string>,
  prefix: string,
  limit: number,
  delimiter: '/' | undefined,
  pageOf: (options: NormalizedListOptions) => Promise<ListPage>,
): Promise<void> {
  const seen = { entries: [] as string[], prefixes: [] as string[] }
  let cursor: string | undefined
  for (let pages = 0; pages <= sorted.length + 1; pages++) {
    const position = cursor === undefined ? undefined : decodeCursor(cursor)
    const page = await pageOf({ prefix, limit, delimiter, position })
    seen.entries.push(...page.entries.map((entry) => entry.key))
    seen.prefixes.push(...(page.prefixes ?? []))
    cursor = page.cursor
    if (cursor === undefined) break
  }
  expect(cursor).toBeUndefined()
  expect(seen).toEqual(model(sorted, hidden, prefix, delimiter))
}

describe('collectListPage', () => {
  it('walks a correct scan exactly once, like the previous implementation', async () => {
    await fc.assert(
      fc.asyncProperty(...listingCase, async (keys, hiddenFlags, prefix, limit, delimiter) => {
        const sorted = sortUtf8(keys)
        const hidden = new Set(sorted.filter((_, index) => hiddenFlags[index] === true))
        await walkMatchesModel(sorted, hidden, prefix, limit, delimiter, async (options) => {
          const calls: unknown[] = []
          const oracleCalls: unknown[] = []
          const page = await collectListPage(options, correctScan(sorted, hidden, prefix, calls))
          const expected = await oracleCollectListPage(
            options,
            correctScan(sorted, hidden, prefix, oracleCalls),
          )
          expect(page).toEqual(expected)
          expect(calls).toEqual(oracleCalls)
          expect(page.entries.length + (page.prefixes?.length ?? 0)).toBeLessThanOrEqual(limit)
          return page
        })
      }),
      { numRuns: 1_500 },
    )
  })

  it('filters a broken scan (out of order, repeated, before the cursor) like the previous implementation', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(key, { maxLength: 8 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.option(key, { nil: undefined }), { maxLength: 5 }),
        fc.option(fc.record({ after: key, group: fc.boolean() }), { nil: undefined }),
        fc.constantFrom('', 'a', '😀'),
        fc.integer({ min: 1, max: 12 }),
        fc.constantFrom('/' as const, undefined),
        async (batches, examined, position, prefix, limit, delimiter) => {
          const scripted = (calls: unknown[]): ScanFunction => {
            let call = 0
            return async (from, max) => {
              calls.push({ from, max })
              const index = call++
              const keys = batches[index] ?? []
              const batch: ScanBatch = {
                entries: keys.map(entryOf),
                done: index >= batches.length - 1,
              }
              const upTo = examined[index]
              return upTo === undefined ? batch : { ...batch, examinedUpTo: upTo }
            }
          }
          const options = { prefix, limit, delimiter, position }
          const calls: unknown[] = []
          const oracleCalls: unknown[] = []
          const page = await collectListPage(options, scripted(calls))
          expect(page).toEqual(await oracleCollectListPage(options, scripted(oracleCalls)))
          expect(calls).toEqual(oracleCalls)
          // Whatever the scan did, the entries are strictly ascending and after the cursor.
          const listed = page.entries.map((entry) => entry.key)
          expect(new Set(listed).size).toBe(listed.length)
          expect(listed).toEqual(sortUtf8(listed))
          if (position !== undefined) {
            for (const k of listed) expect(compareUtf8(k, position.after)).toBeGreaterThan(0)
          }
        },
      ),
      { numRuns: 3_000 },
    )
  })

  it('with ListBatching, builds the same pages from a correct scan as without it', async () => {
    await fc.assert(
      fc.asyncProperty(
        ...listingCase,
        fc.integer({ min: 1, max: 5 }),
        async (keys, hiddenFlags, prefix, limit, delimiter, groupedFirstBatch) => {
          const sorted = sortUtf8(keys)
          const hidden = new Set(sorted.filter((_, index) => hiddenFlags[index] === true))
          // Page by page the same entries and groups as without batching from the same
          // cursor; where a page ends may differ only by an empty last page (a smaller
          // batch sees the scan's end sooner or later than a full one).
          await walkMatchesModel(sorted, hidden, prefix, limit, delimiter, async (options) => {
            const page = await collectListPage(options, correctScan(sorted, hidden, prefix, []), {
              groupedFirstBatch,
            })
            const unbatched = await oracleCollectListPage(
              options,
              correctScan(sorted, hidden, prefix, []),
            )
            expect(page.entries).toEqual(unbatched.entries)
            expect(page.prefixes).toEqual(unbatched.prefixes)
            return page
          })
        },
      ),
      { numRuns: 1_500 },
    )
  })

  /** `a`, 1500 keys under `big/`, 300 plain keys: a delimiter listing's page and the keys its scans returned. */
  async function bigGroup(batching: { groupedFirstBatch?: number }) {
    const sorted = sortUtf8([
      'a',
      ...Array.from({ length: 1500 }, (_, i) => `big/${String(i).padStart(4, '0')}`),
      ...Array.from({ length: 300 }, (_, i) => `z${String(i).padStart(3, '0')}`),
    ])
    const calls: { max: number }[] = []
    const scan = correctScan(sorted, new Set(), '', calls)
    let returned = 0
    // As PostgreSQL's and SQLite's scans: no examinedUpTo (they return every key they read).
    const counting: ScanFunction = async (position, max) => {
      const { entries, done } = await scan(position, max)
      returned += entries.length
      return { entries, done }
    }
    const options = { prefix: '', limit: 1000, delimiter: '/' as const, position: undefined }
    const page = await collectListPage(options, counting, batching)
    return { page, returned, batches: calls.map((call) => call.max) }
  }

  it('with ListBatching, a big group costs one small batch and plain keys grow the batches', async () => {
    const { page, returned, batches } = await bigGroup({ groupedFirstBatch: 64 })
    expect(page.prefixes).toEqual(['big/'])
    expect(page.entries.map((entry) => entry.key)).toEqual([
      'a',
      ...Array.from({ length: 300 }, (_, i) => `z${String(i).padStart(3, '0')}`),
    ])
    // a and 63 keys of big/; after the group, 64 plain keys, then 236 of a batch of 256.
    expect(batches).toEqual([64, 64, 256])
    expect(returned).toBe(64 + 300)
  })

  it('mutant: without ListBatching the same listing reads the whole group', async () => {
    const { page, returned, batches } = await bigGroup({})
    expect(page.prefixes).toEqual(['big/'])
    expect(batches[0]).toBe(1000)
    expect(returned).toBeGreaterThanOrEqual(1000)
  })
})
