import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
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

const SCRIPT = fileURLToPath(new URL('scripts/mutation-summary.mjs', ROOT))

/** Runs the script in `cwd` on `manifest`, writing to `out`; returns its output. */
function summarise(cwd: string, manifest: string, out: string): string {
  return execFileSync(process.execPath, [SCRIPT, manifest, out], { cwd, encoding: 'utf8' })
}

describe('the mutation summary joins a baseline with later whole-file runs', () => {
  it('the committed summary is what the committed manifest, baseline and reports give', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mutation-summary-'))
    try {
      const out = join(dir, 'summary.md')
      summarise(fileURLToPath(ROOT), 'test-suites/contract/mutation-runs.json', out)
      expect(readFileSync(out, 'utf8')).toBe(
        readFileSync(new URL('mutation-summary.md', new URL('../', import.meta.url)), 'utf8'),
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('a file measured whole replaces its baseline counts and survivors; a range rerun is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mutation-summary-'))
    try {
      mkdirSync(join(dir, 'test-suites/contract'), { recursive: true })
      const baseline = {
        from: 'test',
        runs: [
          { name: 'full', commit: 'c', mutants: 6, score: '50.00', mutate: 'stryker.config.mjs' },
        ],
        files: {
          'a.ts': { Killed: 1, Timeout: 0, Survived: 2, NoCoverage: 0 },
          'b.ts': { Killed: 2, Timeout: 0, Survived: 1, NoCoverage: 0 },
        },
        survivors: [
          ...['x = 1', 'y = 2'].map((original, i) => ({
            file: 'a.ts',
            line: i + 1,
            status: 'Survived',
            mutator: 'M',
            original,
            occurrence: 1,
            total: 1,
            replacement: 'r',
            run: 'full',
          })),
          {
            file: 'b.ts',
            line: 1,
            status: 'Survived',
            mutator: 'M',
            original: 'z = 3',
            occurrence: 1,
            total: 1,
            replacement: 'r',
            run: 'full',
          },
        ],
      }
      const mutant = (line: number, status: string, column = 1) => ({
        mutatorName: 'M',
        replacement: 'r',
        status,
        location: { start: { line, column }, end: { line, column: column + 1 } },
      })
      const report = {
        files: {
          'a.ts': {
            source: '// moved\nx = 1\ny = 2\n',
            mutants: [mutant(2, 'Killed'), mutant(3, 'Killed'), mutant(3, 'Survived', 3)],
          },
        },
      }
      writeFileSync(join(dir, 'baseline.json'), JSON.stringify(baseline))
      writeFileSync(join(dir, 'report.json'), JSON.stringify(report))
      const run = { name: 'rerun', report: 'report.json', mutate: 'a.ts' }
      writeFileSync(
        join(dir, 'runs.json'),
        JSON.stringify([{ name: 'base', baseline: 'baseline.json' }, run]),
      )
      summarise(dir, 'runs.json', 'out.md')
      const text = readFileSync(join(dir, 'out.md'), 'utf8')
      // a.ts: the rerun's 2 killed and 1 survivor; b.ts: the baseline's 2 killed and 1 survivor.
      expect(text).toContain('| a.ts | 2 | 0 | 1 | 0 |')
      expect(text).toContain('| b.ts | 2 | 0 | 1 | 0 |')
      expect(text).toContain('(4 of 6 mutants detected')
      expect(text).toMatch(/\| a\.ts:3 \| Survived .* \| rerun \|/)
      expect(text).toMatch(/\| b\.ts:1 \| Survived .* \| full \|/)
      expect(text).not.toMatch(/\| a\.ts:[12] \| Survived/)
      writeFileSync(
        join(dir, 'runs.json'),
        JSON.stringify([
          { name: 'base', baseline: 'baseline.json' },
          { ...run, mutate: 'a.ts:2-3' },
        ]),
      )
      expect(() => summarise(dir, 'runs.json', 'out.md')).toThrow(
        /measured part of a\.ts, which the baseline holds/,
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
