import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { MIN_CRASH_CYCLES } from '@agent-state/contract'
import { afterAll, describe, expect, it } from 'vitest'
import { removeTemps, runCli, tempDir } from './cli-process.js'

afterAll(removeTemps)

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const SMALL = {
  AGENT_STATE_CRASH_CYCLES: String(MIN_CRASH_CYCLES),
  AGENT_STATE_CONTRACT_INSTANCES: '16',
  AGENT_STATE_CONTRACT_INCREMENTS: '3',
}

describe('agent-state --module (a third-party backend)', () => {
  it('verifies a TypeScript module given as a relative path, in vitest workers too', async () => {
    const json = join(tempDir('agent-state-cli-module-'), 'summary.json')
    const { status, stdout, stderr } = await runCli(
      ['--module', './third-party-backend.ts', 'verify', 'thirdparty:', '--json', json],
      { cwd: fixtures, env: SMALL },
    )
    expect(stderr).not.toContain('could not be loaded')
    expect(stdout).toMatch(/total\s+passed \d+\s+failed 0/)
    expect(status).toBe(0)
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(summary.totals.failed).toBe(0)
    expect(summary.totals.passed).toBeGreaterThan(20)
  })

  it('serves the other commands too, also from AGENT_STATE_MODULE', async () => {
    const module = join(fixtures, 'third-party-backend.ts')
    const flag = await runCli(['ls', '--module', module, '-u', 'thirdparty:'])
    expect(flag.stderr).toBe('')
    expect(flag.status).toBe(0)
    const env = await runCli(['stat', 'no/such/key', '-u', 'thirdparty:'], {
      env: { AGENT_STATE_MODULE: module },
    })
    expect(env.status, env.stderr).toBe(4)
  })

  it('says which module could not be loaded (exit 3), or that it is no backend module', async () => {
    const missing = await runCli(['--module', './nope.ts', 'ls', '-u', 'thirdparty:'], {
      cwd: fixtures,
    })
    expect(missing.status).toBe(3)
    expect(missing.stderr).toContain(
      `backend's module ${join(fixtures, 'nope.ts')} could not be loaded`,
    )
    const wrong = await runCli(['--module', './not-a-backend.mjs', 'ls', '-u', 'thirdparty:'], {
      cwd: fixtures,
    })
    expect(wrong.status).toBe(3)
    expect(wrong.stderr).toContain('does not export createBackendFromUrl')
  })

  it('says why an installed package cannot be loaded, and names the user’s package manager', async () => {
    // A project on disk whose backend package's entry is TypeScript: plain node refuses it.
    const project = tempDir('agent-state-cli-ts-entry-')
    const pkg = join(project, 'node_modules', 'ts-entry-backend')
    mkdirSync(join(pkg, 'src'), { recursive: true })
    writeFileSync(join(project, 'package.json'), '{"name":"p","private":true,"type":"module"}')
    writeFileSync(
      join(pkg, 'package.json'),
      '{"name":"ts-entry-backend","version":"1.0.0","type":"module","exports":"./src/index.ts"}',
    )
    writeFileSync(
      join(pkg, 'src', 'index.ts'),
      'export const createBackendFromUrl = (u: string) => u\n',
    )
    const npm = { npm_config_user_agent: 'npm/10.8.2 node/v20.19.0 linux x64 workspaces/false' }
    const ts = await runCli(['--module', 'ts-entry-backend', 'ls', '-u', 'tsb:'], {
      cwd: project,
      env: npm,
    })
    expect(ts.status, ts.stderr).toBe(3)
    expect(ts.stderr).toContain(
      'package ts-entry-backend is installed but could not be loaded: Unknown file extension ".ts"',
    )
    expect(ts.stderr).toContain('build it to JavaScript first, npm run build')
    expect(ts.stderr).toContain('node --import tsx')
    expect(ts.stderr).not.toContain('install it')
    expect(ts.stderr).not.toContain('pnpm')
    const yarn = await runCli(['--module', 'lmdb-backend-missing', 'ls', '-u', 'lmdb:'], {
      cwd: project,
      env: { npm_config_user_agent: 'yarn/4.5.0 npm/? node/v20.19.0 linux x64' },
    })
    expect(yarn.status).toBe(3)
    expect(yarn.stderr).toContain(
      'needs the package lmdb-backend-missing, which is not installed: install it to use lmdb: URLs (yarn add lmdb-backend-missing)',
    )
    const none = await runCli(['--module', 'lmdb-backend-missing', 'ls', '-u', 'lmdb:'], {
      cwd: project,
      env: { npm_config_user_agent: '' },
    })
    expect(none.stderr).toContain('(npm install lmdb-backend-missing)')
  })

  it('refuses an unknown scheme without --module as a usage error naming the way to add one', async () => {
    const { status, stderr } = await runCli(['ls', '-u', 'thirdparty:'])
    expect(status).toBe(2)
    expect(stderr).toContain('registerBackendScheme')
  })
})
