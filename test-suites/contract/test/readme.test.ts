import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { RECORD_STORE_CHECKS } from '../src/index.js'
import { RECORD_STORE_MUTANTS } from './record-store-mutants.js'

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8')

/** The lines of the README block that follows the `<!-- marker: … -->` comment, up to a blank line. */
function block(marker: string): string[] {
  const lines = README.split('\n')
  const start = lines.findIndex((line) => line.startsWith(`<!-- ${marker}:`))
  expect(start, `README has a <!-- ${marker}: --> block`).toBeGreaterThanOrEqual(0)
  const end = lines.findIndex((line, i) => i > start && line.trim() === '')
  return lines.slice(start + 1, end < 0 ? undefined : end)
}

// The README is what a third party reads to know what the record-store tier proves: it must list
// exactly what runs, so adding a check or a mutant without documenting it fails here.
describe('the contract README lists what the record-store tier runs', () => {
  it('one table row per RECORD_STORE_CHECKS entry, in order, with its exact title', () => {
    const rows = block('record-store-checks')
      .slice(2)
      .map((row) => row.split('|')[1]?.trim())
    expect(rows).toEqual(RECORD_STORE_CHECKS.map((check) => check.title))
  })

  it('one bullet per record-store mutant', () => {
    const bullets = block('record-store-mutants').map((line) => line.replace(/^- /, ''))
    expect([...bullets].sort()).toEqual(Object.keys(RECORD_STORE_MUTANTS).sort())
  })
})
