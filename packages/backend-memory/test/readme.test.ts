import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { describe, expect, it } from 'vitest'
import { memoryOptionsSchema } from '../src/index.js'

const readme = packageReadme(import.meta.url)
const { packageDir: PACKAGE_DIR, markdown, blocks, typecheck } = readme

describe('the memory README', () => {
  it('has every section of the backend READMEs, in order', () => {
    const headings = [...markdown.matchAll(/^## (.+)$/gm)].map((m) => m[1])
    expect(headings.slice(0, 5)).toEqual(['Guarantees', 'Options', 'URL form', 'Caveats', 'Tests'])
  })

  it('has one ts block, and no block of another kind', () => {
    expect(blocks.map((block) => block.language)).toEqual(['ts'])
  })

  it.each(blocks.map((block, index) => ({ index, block })))(
    'ts block $index runs as written and prints what its comment says',
    async ({ block }) => {
      const result = await runTsBlock(block.code, { cwd: PACKAGE_DIR, timeoutMs: 60_000 })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      expect(result.stdout).toBe('hello\n')
    },
    90_000,
  )

  it('ts blocks type-check under the package tsconfig', () => {
    expect(typecheck()).toEqual([])
  }, 60_000)

  it('the options table lists exactly the schema fields, with the schema defaults', () => {
    const rows = readme.optionsTable('## Options')
    expect(optionsTableProblems(rows, memoryOptionsSchema)).toEqual([])
    const defaults = memoryOptionsSchema.parse({})
    expect(rows.find((row) => row.name === 'namespace')?.shown).toBe(
      `\`${JSON.stringify(defaults.namespace)}\``,
    )
    expect(rows.find((row) => row.name === 'maxValueBytes')?.shown).toBe('64 MiB')
    expect(defaults.maxValueBytes).toBe(64 * 1024 * 1024)
  })
})
