import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { packageReadme, runTsBlock } from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

// The blocks run without the workspace's NODE_PATH (runTsBlock drops it): a user's process has
// none, and openBackend must find the backend from the user's project alone.
const { packageDir: PACKAGE_DIR, blocks: BLOCKS, typecheck } = packageReadme(import.meta.url)

describe('the core README', () => {
  // A user's project with exactly core and the SQLite backend installed (links into this
  // checkout, run from source): core cannot depend on a backend itself (each backend depends on
  // core), and openBackend must find the backend from the user's project, as the README says.
  let project: string
  beforeAll(() => {
    project = mkdtempSync(join(tmpdir(), 'agent-state-core-readme-'))
    writeFileSync(
      join(project, 'package.json'),
      JSON.stringify({ name: 'user-project', private: true, type: 'module' }),
    )
    const modules = join(project, 'node_modules')
    mkdirSync(join(modules, '@agent-state'), { recursive: true })
    symlinkSync(PACKAGE_DIR, join(modules, '@agent-state', 'core'), 'dir')
    symlinkSync(
      fileURLToPath(new URL('../../backend-sqlite', import.meta.url)),
      join(modules, '@agent-state', 'sqlite'),
      'dir',
    )
    // `node --import tsx` resolves tsx from the working directory.
    const tsx = dirname(createRequire(import.meta.url).resolve('tsx/package.json'))
    symlinkSync(tsx, join(modules, 'tsx'), 'dir')
  })
  afterAll(() => {
    rmSync(project, { recursive: true, force: true })
  })

  it('has exactly two code blocks: openBackend, and third-party schemes', () => {
    expect(BLOCKS.map((b) => [b.language, b.flags, b.heading])).toEqual([
      ['ts', [], '## openBackend'],
      ['ts', [], '### Third-party backends'],
    ])
  })

  it('the third-party block opens a registered scheme through a real module file', async () => {
    // The README's package stands for any module exporting createBackendFromUrl: here a file
    // in the user's project, which names its backend after the URL it was given.
    const module = join(project, 'lmdb-stand-in.mjs')
    writeFileSync(
      module,
      'export function createBackendFromUrl(url, options) {\n' +
        "  return { name: 'stand-in for ' + url + ' in ' + options.namespace, async close() {} }\n" +
        '}\n',
    )
    const result = await runTsBlock(BLOCKS[1]?.code ?? '', {
      cwd: project,
      substitutions: { '@acme/agent-state-lmdb': module },
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('stand-in for lmdb:./state in prod\n')
  }, 60_000)

  it('the openBackend block runs as written and prints what its comments say', async () => {
    const [block] = BLOCKS
    const result = await runTsBlock(block?.code ?? '', {
      cwd: project,
      substitutions: { 'sqlite:./state.db': `sqlite:${join(project, 'state.db')}` },
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toBe('sqlite\ntrue true\nredis://***@cache.internal:6379/0\n')
  }, 60_000)

  it('the ts blocks type-check under the strict repository settings', () => {
    expect(typecheck()).toEqual([])
  }, 60_000)
})
