import { optionsTableProblems, packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { startRedisServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { redisOptionsSchema } from '../src/index.js'

/**
 * Every code block of the README is run or type-checked here, so the README
 * cannot drift from the code (issue 21). The first example runs against this
 * suite's own redis-server (exact substitutions of its port and URL).
 */

const readme = packageReadme(import.meta.url)
const { packageDir, blocks, tsBlocks, typecheck } = readme
const server = await startRedisServer()
afterAll(() => server.stop())

describe('README', () => {
  it('has exactly the blocks this test knows', () => {
    expect(blocks.map((block) => [block.language, ...block.flags].join(' '))).toEqual([
      'ts',
      // Needs a Redis Cluster and a Sentinel group at the addresses shown; the same URLs are
      // parsed by url.test.ts and the topologies are exercised by contract-cluster and sentinel.
      'ts no-run',
      // The URL grammar, not code.
      'text',
    ])
  })

  it('type-checks every ts block under the package tsconfig', () => {
    expect(typecheck()).toEqual([])
    // One whole tsc program: ~10 s alone, several times that on a loaded machine.
  }, 180_000)

  it('runs the first example against a real redis-server', async () => {
    const block = tsBlocks[0]
    if (block === undefined) throw new Error('no ts block')
    const result = await runTsBlock(block.code, {
      cwd: packageDir,
      substitutions: {
        'port: 6379': `port: ${server.port}`,
        "'redis://127.0.0.1:6379/0'": `'redis://127.0.0.1:${server.port}/0'`,
      },
      env: { REDIS_PASSWORD: '' },
      timeoutMs: 60_000,
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('hello\n5\n')
  }, 90_000)

  it('lists every option of the schema in the Options table, and nothing else', () => {
    // In the schema's order; the `cluster`, `sentinel` and `replication` rows name their fields.
    const rows = readme.optionsTable('## Options')
    expect(optionsTableProblems(rows, redisOptionsSchema)).toEqual([])
  })
})
