import { spawn } from 'node:child_process'
import { isAbsolute, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { childArgs } from './child-bundle.js'

/**
 * The directory of the package whose `test/` holds `testFileUrl` (pass
 * `import.meta.url`): children run there so `@agent-state/*` resolve as in the tests.
 */
export function packageDir(testFileUrl: string): string {
  return fileURLToPath(new URL('..', testFileUrl))
}

/** Runs TypeScript files in child Node processes with `cwd` set to one package's directory. */
export type TsRunner = (
  file: string,
  args: readonly string[],
  timeoutMs?: number,
  env?: Readonly<Record<string, string>>,
) => Promise<string>

/**
 * A runner of TypeScript files in child Node processes (prebuilt once per test
 * process, see {@link childArgs}), in `cwd`; each run resolves its stdout. `env` is added to this process's
 * environment (e.g. S3 credentials).
 */
export function tsRunner(cwd: string): TsRunner {
  return (file, args, timeoutMs = 60_000, env = {}) => runTsIn(cwd, file, args, timeoutMs, env)
}

async function runTsIn(
  cwd: string,
  file: string,
  args: readonly string[],
  timeoutMs: number,
  env: Readonly<Record<string, string>>,
): Promise<string> {
  const node = await childArgs(isAbsolute(file) ? file : join(cwd, file))
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...node, ...args], {
      cwd,
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
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('error', reject)
    child.on('close', (code) => {
      clearTimeout(timer)
      if (code === 0) resolve(stdout)
      else reject(new Error(`${file} exited with ${code}: ${stderr}`))
    })
  })
}
