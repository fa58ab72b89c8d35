import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { afterAll, describe, expect, it } from 'vitest'
import { createFsBackend, fsOptionsSchema, layoutOf } from '../src/index.js'

const readme = packageReadme(import.meta.url)
const { packageDir: PACKAGE_DIR, markdown, blocks, tsBlocks, typecheck } = readme
const dataDir = mkdtempSync(join(tmpdir(), 'agent-state-fs-readme-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

describe('the fs README', () => {
  it('has every section of the backend READMEs, in order', () => {
    const headings = [...markdown.matchAll(/^## (.+)$/gm)].map((m) => m[1])
    const wanted = ['Guarantees', 'Options', 'URL form', 'Caveats', 'Tests']
    expect(headings.filter((heading) => wanted.includes(heading as string))).toEqual(wanted)
    expect(headings.slice(0, 5)).toEqual(wanted)
  })

  it('has only ts blocks and the text layout block', () => {
    expect(tsBlocks.length).toBe(2)
    expect(blocks.map((block) => block.language).sort()).toEqual(['text', 'ts', 'ts'])
  })

  it.each(tsBlocks.map((block, index) => ({ index, block })))(
    'ts block $index runs as written (its ./.agent-state root in a temp directory)',
    async ({ index, block }) => {
      const root = join(dataDir, `block-${index}`)
      const substitutions = block.code.includes("'file:./.agent-state'")
        ? { "'file:./.agent-state'": JSON.stringify(`file:${root}`) }
        : { "'./.agent-state'": JSON.stringify(root) }
      const result = await runTsBlock(block.code, {
        cwd: PACKAGE_DIR,
        substitutions,
        timeoutMs: 60_000,
      })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      // The block really stored through the fs backend, under the substituted root.
      if (index === 0) {
        const backend = createFsBackend({ root, namespace: 'my-agent' })
        const read = await backend.get('notes/today')
        expect(new TextDecoder().decode(read?.value)).toBe('hello again')
        await backend.close()
      }
    },
    90_000,
  )

  it('ts blocks type-check under the package tsconfig', () => {
    expect(typecheck()).toEqual([])
  }, 60_000)

  it('the options table lists exactly the schema fields, with the schema defaults', () => {
    const rows = readme.optionsTable('## Options')
    expect(optionsTableProblems(rows, fsOptionsSchema)).toEqual([])
    const defaults = fsOptionsSchema.parse({ root: '/r' }) as Record<string, unknown>
    for (const { name, shown } of rows) {
      if (name === 'root') expect(shown).toBe('required')
      else if (name === 'clock') expect(shown).toBe('`Date.now`')
      else if (name === 'maxValueBytes') {
        expect(shown).toBe('64 MiB')
        expect(defaults[name]).toBe(64 * 1024 * 1024)
      } else expect(JSON.parse(shown.replaceAll('`', '')), name).toEqual(defaults[name])
    }
  })

  it('the layout block names the directories layoutOf uses', () => {
    const layout = blocks.find((block) => block.language === 'text')
    const { recordsDir, locksDir } = layoutOf('/r', 'ns')
    expect(recordsDir).toBe('/r/ns/records')
    expect(locksDir).toBe('/r/ns/locks')
    expect(layout?.code).toMatch(/^ {4}records\/ /m)
    expect(layout?.code).toMatch(/^ {4}locks\/ /m)
  })
})
