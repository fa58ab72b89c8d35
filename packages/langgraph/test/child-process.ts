import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** The package directory: children run there so `@agent-state/*` resolve as in the tests. */
export const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))

/**
 * Runs a TypeScript file in a child Node process (sources via tsx); resolves
 * its stdout. `env` is added to this process's environment (e.g. S3 credentials).
 */
export function runTs(
  file: string,
  args: readonly string[],
  timeoutMs = 60_000,
  env: Readonly<Record<string, string>> = {},
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@agent-state/source', '--import', 'tsx', file, ...args],
      { cwd: PACKAGE_DIR, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`${file} exited with ${code}: ${stderr}`))
    })
  })
}
