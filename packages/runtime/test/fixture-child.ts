/**
 * Runs a fixture script (test/fixtures/...) in a child Node process and resolves however it
 * ends, SIGKILL included, with its JSON output lines: for the crash tests, whose children
 * kill themselves at a chosen point.
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { childArgs } from '@agent-state/backend-targets'
import { PACKAGE_DIR } from './child-process.js'

/** How a fixture child ended. */
export interface FixtureChildResult {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  /** Its stdout, one JSON object a line. */
  readonly lines: readonly Record<string, unknown>[]
  readonly stderr: string
}

/** Runs `fixture` (relative to the package) with `args`; killed after 90 s. */
export async function runFixtureChild(
  fixture: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
): Promise<FixtureChildResult> {
  const node = await childArgs(join(PACKAGE_DIR, fixture))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...node, ...args], {
      cwd: PACKAGE_DIR,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      const lines = stdout
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      resolve({ code, signal, lines, stderr })
    })
  })
}
