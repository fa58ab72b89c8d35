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
  const ended = await runChild(cwd, file, args, timeoutMs, env)
  if (ended.code === 0) return ended.stdout
  throw new Error(`${file} exited with ${ended.code}: ${ended.stderr}`)
}

/** How a child process ended, with everything it printed. */
export interface ChildEnd {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly stdout: string
  readonly stderr: string
}

/**
 * Runs TypeScript `file` (relative to `cwd` unless absolute) in a child Node
 * process with `args`, `env` added to this process's environment, and resolves
 * however it ends (a SIGKILL included: crash tests kill their children, or the
 * children themselves); killed with SIGKILL after `timeoutMs`.
 */
export async function runChild(
  cwd: string,
  file: string,
  args: readonly string[],
  timeoutMs: number,
  env: Readonly<Record<string, string>>,
): Promise<ChildEnd> {
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
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr })
    })
  })
}
