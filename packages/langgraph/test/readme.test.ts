import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readmeBlocks, runTsBlock, typecheckBlocks } from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
const BLOCKS = readmeBlocks(join(PACKAGE_DIR, 'README.md'))

/** What each block must print, by the heading it sits under (its comments say the same). */
const EXPECTED_OUTPUT: Record<string, string> = {
  '# @agent-state/langgraph': "{ log: [ 'start', 'plan' ] }\n",
  '### Thread ownership (`ownership: { holder, ttlMs }`)': 'LEASE_HELD\n',
}

describe('the langgraph README', () => {
  let dataDir: string
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'agent-state-langgraph-readme-'))
  })
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true })
  })

  it('has exactly the two ts blocks this test knows', () => {
    expect(BLOCKS.map((b) => [b.language, b.flags, b.heading])).toEqual(
      Object.keys(EXPECTED_OUTPUT).map((heading) => ['ts', [], heading]),
    )
  })

  it.each(BLOCKS.map((block, index) => ({ index, block })))(
    'the ts block at line $block.line runs as written and prints what its comments say',
    async ({ index, block }) => {
      const result = await runTsBlock(block.code, {
        cwd: PACKAGE_DIR,
        substitutions: { 'sqlite:./state.db': `sqlite:${join(dataDir, `block-${index}.db`)}` },
        // The pnpm shim that starts vitest sets NODE_PATH to every hoisted workspace package;
        // a user's process has none.
        env: { NODE_PATH: '' },
      })
      expect(result.stderr).toBe('')
      expect(result.exitCode).toBe(0)
      expect(result.stdout).toBe(EXPECTED_OUTPUT[block.heading])
    },
    60_000,
  )

  it('the ts blocks type-check under the strict repository settings', () => {
    expect(
      typecheckBlocks(
        BLOCKS.map((b) => b.code),
        { packageDir: PACKAGE_DIR },
      ),
    ).toEqual([])
  }, 90_000)
})
