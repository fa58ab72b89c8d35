import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

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
 * A runner of TypeScript files in child Node processes (sources via tsx), in
 * `cwd`; each run resolves its stdout. `env` is added to this process's
 * environment (e.g. S3 credentials).
 */
export function tsRunner(cwd: string): TsRunner {
  return (file, args, timeoutMs = 60_000, env = {}) => runTsIn(cwd, file, args, timeoutMs, env)
}

function runTsIn(
  cwd: string,
  file: string,
  args: readonly string[],
  timeoutMs: number,
  env: Readonly<Record<string, string>>,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--conditions=@agent-state/source', '--import', 'tsx', file, ...args],
      { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
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
