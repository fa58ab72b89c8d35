import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
// @ts-expect-error: a plain ESM script without declarations (typed by its JSDoc).
import * as summary from '../../../scripts/mutation-summary.mjs'

interface Equivalent {
  file: string
  original: string
  occurrence?: number
  replacement?: string
  class: string
}
interface Matcher {
  classOf(
    mutant: { file: string; line: number; replacement: string },
    lines: string[],
  ): string | undefined
  stale(): Equivalent[]
  ambiguous(): Equivalent[]
}
const { equivalenceMatcher, readEquivalents, unmatchedInTree } = summary as {
  equivalenceMatcher(equivalents: Equivalent[]): Matcher
  readEquivalents(entries: unknown): Equivalent[]
  unmatchedInTree(equivalents: Equivalent[], read: (file: string) => string): Equivalent[]
}

const ROOT = new URL('../../../', import.meta.url)
const FILE = 'packages/x/src/x.ts'
const SOURCE = [
  'function f(a) {',
  '  if (a === 1) return 1',
  '  durable: false,',
  '  if (a === 1) return 1',
  '}',
]
const mutant = (line: number, replacement = 'true') => ({ file: FILE, line, replacement })

describe('mutation-equivalent.json entries are keyed by what was mutated, not by line', () => {
  it('an entry still matches its mutant after the code moved', () => {
    const entry = { file: FILE, original: 'durable: false,', class: 'E0 moved' }
    const moved = ['// two', '// new lines', ...SOURCE]
    const m = equivalenceMatcher([entry])
    expect(m.classOf(mutant(3), SOURCE)).toBe('E0 moved')
    expect(m.classOf(mutant(5), moved)).toBe('E0 moved')
    // Another line, or another replacement where the entry names one, is not the entry's.
    expect(m.classOf(mutant(2), SOURCE)).toBeUndefined()
    const named = equivalenceMatcher([{ ...entry, replacement: 'false' }])
    expect(named.classOf(mutant(3, 'true'), SOURCE)).toBeUndefined()
    expect(named.classOf(mutant(3, 'false'), SOURCE)).toBe('E0 moved')
  })

  it('an edit of the mutated line un-matches the entry and lists it as stale', () => {
    const m = equivalenceMatcher([{ file: FILE, original: 'durable: false,', class: 'E0' }])
    const edited = SOURCE.map((line) => line.replace('durable: false', 'durable: true'))
    expect(m.classOf(mutant(3), edited)).toBeUndefined()
    expect(m.stale()).toHaveLength(1)
  })

  it('a text on several lines matches only with its occurrence, else the entry is ambiguous', () => {
    const text = 'if (a === 1) return 1'
    const vague = equivalenceMatcher([{ file: FILE, original: text, class: 'E0' }])
    expect(vague.classOf(mutant(2), SOURCE)).toBeUndefined()
    expect(vague.classOf(mutant(4), SOURCE)).toBeUndefined()
    expect(vague.ambiguous()).toHaveLength(1)
    const second = equivalenceMatcher([{ file: FILE, original: text, occurrence: 2, class: 'E0' }])
    expect(second.classOf(mutant(2), SOURCE)).toBeUndefined()
    expect(second.classOf(mutant(4), ['// moved', ...SOURCE].slice(1))).toBe('E0')
    expect(second.classOf(mutant(5), ['// moved', ...SOURCE])).toBe('E0')
    expect(second.ambiguous()).toEqual([])
  })

  it('refuses the old line-keyed form', () => {
    expect(() => readEquivalents([{ at: `${FILE}:3`, class: 'E0' }])).toThrow(
      /needs file, original/,
    )
    expect(() =>
      readEquivalents([{ file: FILE, original: 'x', occurrence: 0, class: 'E0' }]),
    ).toThrow(/occurrence must be a positive integer/)
  })

  // An entry the tree no longer matches would silently stop marking its survivor at the next run:
  // whoever edits an argued line re-reads the argument (mutation-testing.md) and updates the key.
  it('every committed entry matches exactly one line of the current tree', () => {
    const entries = readEquivalents(
      JSON.parse(
        readFileSync(new URL('mutation-equivalent.json', new URL('../', import.meta.url)), 'utf8'),
      ),
    )
    expect(entries.length).toBeGreaterThan(0)
    const unmatched = unmatchedInTree(entries, (file) => readFileSync(new URL(file, ROOT), 'utf8'))
    expect(unmatched).toEqual([])
  })
})
