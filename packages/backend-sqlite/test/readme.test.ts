import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { describe, expect, it } from 'vitest'
import { sqliteOptionsSchema } from '../src/index.js'
import { PACKAGE_DIR, useTempDatabase } from './helpers.js'

const readme = packageReadme(import.meta.url)
const { blocks, tsBlocks, typecheck } = readme
const shBlocks = blocks.filter((block) => block.language === 'sh')

describe('the SQLite README', () => {
  const db = useTempDatabase()

  it('has only ts and sh blocks, none flagged', () => {
    expect(blocks.map((block) => block.language).sort()).toEqual(['sh', 'ts'])
    expect(blocks.flatMap((block) => block.flags)).toEqual([])
  })

  it.each(tsBlocks.map((block) => ({ line: block.line, code: block.code })))(
    'runs the ts block at line $line as written, on a temp database',
    async ({ code }) => {
      const result = await runTsBlock(code, {
        cwd: PACKAGE_DIR,
        substitutions: { "'./state.db'": JSON.stringify(db.path) },
      })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      expect(existsSync(db.path)).toBe(true)
    },
    60_000,
  )

  it('type-checks every ts block under the package tsconfig', () => {
    expect(typecheck()).toEqual([])
  }, 120_000)

  it('lists exactly the schema options in the Options table', () => {
    // Names in order, and `required` exactly where the schema requires (`path`).
    const rows = readme.optionsTable('## Options')
    expect(optionsTableProblems(rows, sqliteOptionsSchema)).toEqual([])
  })

  // The Tests block's vitest commands are this very suite: running them from
  // inside it would recurse, so the test checks what they name exists (the
  // files, the knob the suite reads); the benchmark command is run as written.
  it('the Tests commands name what exists', () => {
    const [tests] = shBlocks
    const lines = (tests?.code ?? '')
      .split('\n')
      .map((line) => (line.split('#')[0] ?? '').trim())
      .filter((line) => line !== '')
    expect(lines[0]).toBe('cd packages/backend-sqlite')
    expect(resolve(PACKAGE_DIR, '../..', 'packages/backend-sqlite')).toBe(resolve(PACKAGE_DIR))
    // The crash tests read their cycle count through the contract's knob (which holds the floor).
    const contractKnob = join(PACKAGE_DIR, '../../test-suites/contract/src/crash-cycle-knob.ts')
    const testSources = readdirSync(join(PACKAGE_DIR, 'test'))
      .filter((name) => name.endsWith('.ts'))
      .map((name) => readFileSync(join(PACKAGE_DIR, 'test', name), 'utf8'))
      .concat(readFileSync(contractKnob, 'utf8'))
      .join('\n')
    const vitest = lines.filter((line) => line.includes('npx vitest run'))
    expect(vitest.length).toBe(3)
    for (const line of vitest) {
      const [env, rest = ''] = line.split('npx vitest run')
      for (const assignment of (env ?? '').trim().split(/\s+/).filter(Boolean)) {
        const name = assignment.split('=')[0] ?? ''
        expect(testSources).toContain(`process.env.${name}`)
      }
      for (const file of rest.trim().split(/\s+/).filter(Boolean)) {
        expect(existsSync(join(PACKAGE_DIR, file))).toBe(true)
      }
    }
    // The benchmark takes ~20 s on the 2-core test machine, and measures
    // rather than checks, so it is not run here: the test checks that the
    // script exists and is inside the package tsconfig (type-checked by
    // `tsc -p tsconfig.json`, as CI runs it).
    const node = lines.filter((line) => line.startsWith('node '))
    expect(node).toEqual([
      'node --conditions=@agent-state/source --import tsx benchmarks/event-loop-blocking.ts',
    ])
    expect(existsSync(join(PACKAGE_DIR, 'benchmarks/event-loop-blocking.ts'))).toBe(true)
    const tsconfig = JSON.parse(readFileSync(join(PACKAGE_DIR, 'tsconfig.json'), 'utf8'))
    expect(tsconfig.include).toContain('benchmarks')
  })
})
