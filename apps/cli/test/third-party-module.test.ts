import { readFileSync } from 'node:fs'
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

  it('refuses an unknown scheme without --module as a usage error naming the way to add one', async () => {
    const { status, stderr } = await runCli(['ls', '-u', 'thirdparty:'])
    expect(status).toBe(2)
    expect(stderr).toContain('registerBackendScheme')
  })
})
