import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readmeBlocks, runTsBlock, typecheckBlocks } from '@agent-state/readme-blocks'
import { describe, expect, it } from 'vitest'
import { memoryOptionsSchema } from '../src/index.js'

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
const README = join(PACKAGE_DIR, 'README.md')
const markdown = readFileSync(README, 'utf8')
const blocks = readmeBlocks(README)

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
    expect(
      typecheckBlocks(
        blocks.map((block) => block.code),
        { packageDir: PACKAGE_DIR },
      ),
    ).toEqual([])
  }, 60_000)

  it('the options table lists exactly the schema fields, with the schema defaults', () => {
    const start = markdown.indexOf('\n## Options\n')
    const table = markdown.slice(start, markdown.indexOf('\n## ', start + 1))
    const rows = [...table.matchAll(/^\| `(\w+)` +\| ([^|]+?) +\|/gm)].map((m) => ({
      name: m[1] as string,
      shown: m[2] as string,
    }))
    expect(rows.map((row) => row.name)).toEqual(Object.keys(memoryOptionsSchema.shape))
    const defaults = memoryOptionsSchema.parse({})
    expect(rows.find((row) => row.name === 'namespace')?.shown).toBe(
      `\`${JSON.stringify(defaults.namespace)}\``,
    )
    expect(rows.find((row) => row.name === 'maxValueBytes')?.shown).toBe('64 MiB')
    expect(defaults.maxValueBytes).toBe(64 * 1024 * 1024)
  })
})
