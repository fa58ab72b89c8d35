import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readmeBlocks, runTsBlock, typecheckBlocks } from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
const BLOCKS = readmeBlocks(join(PACKAGE_DIR, 'README.md'))

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
      // The pnpm shim that starts vitest sets NODE_PATH to every hoisted workspace package;
      // a user's process has none.
      env: { NODE_PATH: '' },
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe("{ name: 'Ada' }\nuser:1 { name: 'Ada' }\n")
  }, 60_000)

  it('the ts block type-checks under the strict repository settings', () => {
    expect(
      typecheckBlocks(
        BLOCKS.map((b) => b.code),
        { packageDir: PACKAGE_DIR },
      ),
    ).toEqual([])
  }, 60_000)
})
