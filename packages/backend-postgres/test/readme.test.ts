import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { postgresOptionsSchema } from '../src/index.js'

/**
 * Every code block of the README is run or checked here: the grants run as
 * written on a real server, then the example runs as the role they created.
 */
const readme = packageReadme(import.meta.url)
const { packageDir, blocks, tsBlocks, typecheck } = readme
const server = await startPostgresServer()
afterAll(() => server.stop())

const PASSWORD = 'readme p@ss:/?#'

describe('README', () => {
  it('has exactly the blocks this test knows', () => {
    expect(blocks.map((block) => [block.language, ...block.flags].join(' '))).toEqual([
      'ts',
      'sql',
      // The URL grammar and the PgBouncer example URL, not code.
      'text',
      'text',
      // The Tests commands: this suite's own files.
      'sh',
    ])
  })

  it('runs the grants, then the example as the role they created', async () => {
    const grants = blocks.find((block) => block.language === 'sql')?.code ?? ''
    await server.sql('CREATE DATABASE app')
    await server.sql(grants.replace("PASSWORD '…'", `PASSWORD '${PASSWORD}'`), 'app')
    const block = tsBlocks[0]
    if (block === undefined) throw new Error('no ts block')
    const url = server.urlFor('agent_state_app', PASSWORD, 'app')
    const result = await runTsBlock(block.code, {
      cwd: packageDir,
      substitutions: { "'postgres://agent:secret@127.0.0.1:5432/app'": JSON.stringify(url) },
      timeoutMs: 60_000,
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('hello\n5\n')
  }, 90_000)

  it('type-checks every ts block under the package tsconfig', () => {
    expect(typecheck()).toEqual([])
  }, 180_000)

  it('lists every option of the schema in the Options table, and nothing else', () => {
    const rows = readme.optionsTable('## Options')
    expect(optionsTableProblems(rows, postgresOptionsSchema)).toEqual([])
  })
})
