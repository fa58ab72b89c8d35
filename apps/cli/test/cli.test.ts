import { spawnSync } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePort } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'

const bin = fileURLToPath(new URL('../bin/agent-state.js', import.meta.url))
const temps: string[] = []
afterAll(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true })
})

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}

function run(args: string[], cwd = process.cwd()) {
  const result = spawnSync(process.execPath, [bin, ...args], {
    cwd,
    encoding: 'utf8',
    timeout: 300_000,
  })
  return { status: result.status, output: `${result.stdout}\n${result.stderr}` }
}

describe('agent-state verify', () => {
  it('passes on the memory backend, prints the summary and writes it as JSON', () => {
    const dir = tempDir('agent-state-cli-')
    const json = join(dir, 'summary.json')
    const { status, output } = run(['verify', 'memory:', '--json', json])
    expect(output).toMatch(/total\s+passed \d+\s+failed 0/)
    expect(status).toBe(0)
    const summary = JSON.parse(readFileSync(json, 'utf8'))
    expect(summary.totals.failed).toBe(0)
    expect(summary.totals.passed).toBeGreaterThan(20)
  })

  it('runs on the embedded default (the filesystem) and leaves no namespace behind', () => {
    const cwd = tempDir('agent-state-cli-default-')
    const { status, output } = run(['verify'], cwd)
    expect(output).toContain('file:./.agent-state')
    expect(output).toMatch(/total\s+passed \d+\s+failed 0/)
    expect(status).toBe(0)
    const left = readdirSync(join(cwd, '.agent-state'))
    expect(left).toEqual([])
  })

  it('exits non-zero when the backend fails the contract, without printing its password', async () => {
    const port = await freePort()
    const { status, output } = run([
      'verify',
      `redis://agent:s3cr3t-pw@127.0.0.1:${port}/0?connectTimeoutMs=200`,
    ])
    expect(status).toBe(1)
    expect(output).toMatch(/failed [1-9]/)
    expect(output).not.toContain('s3cr3t-pw')
  })

  it('exits 1 with a clear message for an unknown scheme', () => {
    const { status, output } = run(['verify', 'ftp://host/x'])
    expect(status).toBe(1)
    expect(output).toContain('Unknown backend URL')
  })

  it('exits 2 on bad usage', () => {
    expect(run(['frobnicate']).status).toBe(2)
    expect(run(['verify', 'memory:', 'extra']).status).toBe(2)
  })
})
