import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readmeBlocks, runTsBlock, typecheckBlocks } from '@agent-state/readme-blocks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { removeTemps, runCli, tempDir } from './cli-process.js'
import { services } from './services.js'
import { agentStateArgs, shellLines } from './shell-line.js'

// The repository's README is tested here because the CLI package depends on every backend and
// on the contract suite, which its blocks use, and its tests already start the real servers.
const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const BLOCKS = readmeBlocks(join(REPO_ROOT, 'README.md'))
const block = (index: number) => {
  const found = BLOCKS[index]
  if (found === undefined) throw new Error(`the root README has no block ${index}`)
  return found
}

describe('the root README', () => {
  let dataDir: string
  beforeAll(() => {
    dataDir = tempDir('agent-state-root-readme-')
  })
  afterAll(removeTemps)

  it('has exactly the blocks this test knows', () => {
    expect(BLOCKS.map((b) => [b.language, b.flags, b.heading])).toEqual([
      ['sh', [], '# agent-state'],
      ['ts', [], '## Picking a backend by URL'],
      ['ts', [], '## Checking a backend: yours, or a live deployment'],
      ['sh', [], '## Checking a backend: yours, or a live deployment'],
    ])
  })

  it('its first two commands are the demo command and exactly what CI runs', () => {
    // Not run here: the second is this very test suite (it would recurse), and the first
    // reinstalls the workspace; demo.test.ts and readme.test.ts run the demo itself.
    const [demo, test] = block(0).code.trimEnd().split('\n')
    const ciRun = readFileSync(join(REPO_ROOT, '.ci', 'run'), 'utf8')
      .trimEnd()
      .split('\n')
    expect(test).toBe(ciRun.at(-1))
    const cliReadme = readmeBlocks(join(PACKAGE_DIR, 'README.md'))
    const demoLine = cliReadme
      .find((b) => b.heading === '## `agent-state demo [url]`')
      ?.code.split('\n')[0]
      ?.split('#')[0]
      ?.trim()
    expect(demo).toBe(`npx -y pnpm@12.4.2 install && ${demoLine}`)
    expect(demoLine).toBe('npx -y pnpm@12.4.2 agent-state demo')
    // What those commands run: pnpm at the pinned version, the root scripts they name.
    const root = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8'))
    expect(root.packageManager).toBe('pnpm@12.4.2')
    expect(root.scripts['agent-state']).toBe('node apps/cli/bin/agent-state.js')
    expect(root.scripts.test).toBe('node scripts/test-all.mjs')
  })

  it('the openBackend block runs as written on a fresh directory', async () => {
    // The block's default URL must be the one that runs (an empty value would be used as is).
    expect(process.env.AGENT_STATE_URL).toBeUndefined()
    const result = await runTsBlock(block(1).code, {
      cwd: PACKAGE_DIR,
      substitutions: { "'file:./.agent-state'": `'file:${join(dataDir, 'state')}'` },
      // The pnpm shim that starts vitest sets NODE_PATH to every hoisted workspace package;
      // a user's process has none.
      env: { NODE_PATH: '' },
    })
    expect(result.stderr).toBe('')
    expect(result.exitCode).toBe(0)
  }, 60_000)

  it('the ts blocks type-check; the contract block against a stand-in for ./my-backend.js', () => {
    // The contract block is a vitest file that runs the whole contract suite (minutes with every
    // tier): verify.test.ts runs that same describeBackendContract on memory and the filesystem.
    // Here it is type-checked against the real suite, its `./my-backend.js` a memory backend.
    const contract = block(2).code
    expect(contract).toContain("from './my-backend.js'")
    expect(
      typecheckBlocks(
        [block(1).code, contract.replace("'./my-backend.js'", "'../test/fixtures/my-backend.js'")],
        { packageDir: PACKAGE_DIR },
      ),
    ).toEqual([])
  }, 90_000)

  it('the verify command reaches the Redis it names (here the real server, whose user it is not)', async () => {
    const [line] = shellLines(block(3).code)
    expect(line?.argv.slice(0, 4)).toEqual(['npx', '-y', 'pnpm@12.4.2', 'agent-state'])
    const args = agentStateArgs(
      line ?? { argv: [], pipeTo: undefined, redirectTo: undefined, comment: '' },
    )
    expect(args).toEqual(['verify', 'redis://user:password@redis.internal:6379/0'])
    // A whole verify is minutes (verify.test.ts runs it); up to the preflight it is the same
    // command: the URL parses, the server answers, the credentials are refused in one line.
    const { host, port } = services().redis
    const url = (args[1] ?? '').replace('redis.internal:6379', `${host}:${port}`)
    const result = await runCli(['verify', url])
    expect(result.status).toBe(3)
    expect(result.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(
        /^agent-state verify: redis:\/\/\*\*\*@127\.0\.0\.1:\d+\/0: UNAVAILABLE: .*authentication failed/,
      ),
    ])
  })
})
