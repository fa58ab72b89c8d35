import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { keyvStoreOptionsSchema } from '../src/index.js'

const readme = packageReadme(import.meta.url)
const { packageDir: PACKAGE_DIR, blocks: BLOCKS, typecheck } = readme

describe('the keyv README', () => {
  let dataDir: string
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'agent-state-keyv-readme-'))
  })
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('has exactly one code block, the ts usage block', () => {
    expect(BLOCKS.map((b) => [b.language, b.flags, b.heading])).toEqual([
      ['ts', [], '# @agent-state/keyv'],
    ])
  })

  it('the usage block runs as written and prints what its comments say', async () => {
    const [block] = BLOCKS
    const result = await runTsBlock(block?.code ?? '', {
      cwd: PACKAGE_DIR,
      substitutions: { 'sqlite:./cache.db': `sqlite:${join(dataDir, 'cache.db')}` },
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe("{ name: 'Ada' }\nuser:1 { name: 'Ada' }\n")
  }, 60_000)

  it('the ts block type-checks under the strict repository settings', () => {
    expect(typecheck()).toEqual([])
  }, 60_000)

  it('the options table lists exactly the schema fields, with the schema defaults', () => {
    const rows = readme.optionsTable('## Options (`keyvStoreOptionsSchema`)')
    expect(optionsTableProblems(rows, keyvStoreOptionsSchema)).toEqual([])
    const defaults = keyvStoreOptionsSchema.parse({ backend: { contractVersion: 1 } })
    const shown = Object.fromEntries(rows.map((row) => [row.name, row.shown]))
    expect(shown.prefix).toBe(`\`${JSON.stringify(defaults.prefix)}\``)
    expect(shown.clearConcurrency).toBe(`\`${defaults.clearConcurrency}\``)
  })
})
