import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import {
  type ReadmeBlock,
  readmeBlocks,
  runCommand,
  runTsBlock,
  typecheckBlocks,
} from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { RUNTIME_ERROR_CODES, stateHandleSchema } from '../src/index.js'
import { handoffEnvelopeSchema } from '../src/internal.js'
import { PACKAGE_DIR } from './child-process.js'

// The pnpm shim that starts vitest sets NODE_PATH to every hoisted workspace package; a user's
// process has none, so the blocks and commands run without it.
const USER_ENV = { NODE_PATH: '' }

const README_PATH = join(PACKAGE_DIR, 'README.md')
// The README is the overview; the specification it links to is in docs/runtime/, whose blocks are
// held to the same rules.
const DOCS_DIR = join(PACKAGE_DIR, '..', '..', 'docs', 'runtime')
const DOC_PAGES = ['sessions.md', 'workers.md', 'daemons.md', 'runs-and-effects.md', 'errors.md']
const ERRORS = readFileSync(join(DOCS_DIR, 'errors.md'), 'utf8')
const BLOCKS = [README_PATH, ...DOC_PAGES.map((page) => join(DOCS_DIR, page))].flatMap((path) =>
  readmeBlocks(path).map((block) => ({ ...block, heading: `${basename(path)} ${block.heading}` })),
)
const byLanguage = (language: string): ReadmeBlock[] =>
  BLOCKS.filter((block) => block.language === language)

// Every block of this README is accounted for: ts blocks run and type-check, json blocks parse
// against the schema they document, the sh block's commands run. A block of any other language
// (or a new flag) fails here until this test says what to do with it.
describe('the runtime README and docs/runtime', () => {
  let dataDir: string
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'agent-state-readme-blocks-'))
  })
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('has only ts, json and sh blocks, none flagged', () => {
    expect(BLOCKS.map((block) => block.language).sort()).toEqual([
      'json',
      'json',
      'sh',
      'ts',
      'ts',
      'ts',
      'ts',
      'ts',
      'ts',
      'ts',
    ])
    expect(BLOCKS.filter((block) => block.flags.length > 0)).toEqual([])
  })

  const tsBlocks = byLanguage('ts')
  it('has TypeScript blocks to run', () => {
    expect(tsBlocks.length).toBeGreaterThanOrEqual(4)
  })

  it.each(tsBlocks.map((block, index) => ({ index, block })))(
    'ts block at line $block.line ($block.heading) runs as written',
    async ({ index, block }) => {
      // The only change: each block gets its own database file outside the checkout (a
      // substitution that no longer matches fails the run).
      const result = await runTsBlock(block.code, {
        cwd: PACKAGE_DIR,
        substitutions: { 'sqlite:./state.db': `sqlite:${dataDir}/block-${index}.db` },
        env: USER_ENV,
      })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
    },
    60_000,
  )

  it('the sessions block prints what its comments say', async () => {
    const block = tsBlocks.find((b) => b.heading === 'README.md ## Sessions')
    if (block === undefined) throw new Error('no ts block under ## Sessions')
    const result = await runTsBlock(block.code, {
      cwd: PACKAGE_DIR,
      substitutions: { 'sqlite:./state.db': `sqlite:${dataDir}/sessions-output.db` },
      env: USER_ENV,
    })
    expect(result.exitCode).toBe(0)
    const lines = result.stdout.trimEnd().split('\n')
    expect(lines[0]).toBe('error')
    expect(lines[1]).toBe('# Plan')
    expect(lines[2]).toBe('- inspect PR')
    expect(lines[3]).toBe("[ 'evidence/files.json', 'plan.md' ]")
    expect(result.stdout).toContain("sessions: [ 'review-42' ]")
  }, 60_000)

  it('ts blocks type-check under the strict repository settings', () => {
    expect(
      typecheckBlocks(
        tsBlocks.map((block) => block.code),
        { packageDir: PACKAGE_DIR },
      ),
    ).toEqual([])
  }, 120_000)

  it('the json blocks are valid instances of the schemas they document', () => {
    const [handle, envelope] = byLanguage('json').map((block) => JSON.parse(block.code))
    expect(stateHandleSchema.parse(handle)).toEqual(handle)
    // The handle is the one the sessions block's session reports.
    expect(handle).toMatchObject({
      root: 'sqlite:./state.db',
      sessionId: 'review-42',
      conflictPolicy: 'error',
    })
    expect(handoffEnvelopeSchema.parse(envelope)).toEqual(envelope)
  })

  it('the example commands work as written, right after install', async () => {
    const [sh] = byLanguage('sh')
    const commands = (sh?.code ?? '')
      .split('\n')
      .filter((line) => line.startsWith('node '))
      .map((line) => line.split('#')[0]?.trim().split(/\s+/) ?? [])
    expect(commands).toHaveLength(2)
    const db = `sqlite:${dataDir}/example.db`
    const substitute = (argv: string[], workerId = '') =>
      argv.map((arg) => (arg === 'sqlite:./state.db' ? db : arg === '<workerId>' ? workerId : arg))
    const run = async (argv: string[]): Promise<string> => {
      const result = await runCommand(argv, { cwd: PACKAGE_DIR, env: USER_ENV })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      return result.stdout
    }
    const [suspend = [], resume = []] = commands
    const suspension = JSON.parse((await run(substitute(suspend))).trim())
    const resumed = JSON.parse((await run(substitute(resume, suspension.handle.workerId))).trim())
    expect(resumed.status).toBe('done')
  }, 120_000)

  it('lists exactly the runtime error codes in its diagnostics table', () => {
    const start = ERRORS.indexOf('\n## Runtime error codes\n')
    expect(start).toBeGreaterThan(-1)
    const section = ERRORS.slice(start)
    const rows = section.split('\n').filter((line) => /^\| (HARN-SUS-\d{3}|—) /.test(line))
    const listed = new Set(
      rows.flatMap((row) =>
        [...(row.split('|').at(-2) ?? '').matchAll(/`([A-Z_]+)`/g)].map((m) => m[1]),
      ),
    )
    expect([...listed].sort()).toEqual([...RUNTIME_ERROR_CODES].sort())
  })
})
