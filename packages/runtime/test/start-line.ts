import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { childArgs } from '@agent-state/backend-targets'
import { PACKAGE_DIR } from './child-process.js'

/**
 * Starts one child of TypeScript file `file` (relative to the package, run from its bundle)
 * per argument list, waits until every child printed `ready` (fixtures/start-line.ts: it has
 * warmed up), then releases them all at once with `go` on stdin. Resolves each child's stdout
 * after its `ready` line; rejects if a child exits non-zero, before `ready`, or runs past
 * `timeoutMs` (then every child is killed).
 *
 * Why not a start time agreed in advance: that needs a margin for the slowest start-up
 * (2.5 s per race, on a loaded box still sometimes too short), whereas this waits exactly as
 * long as the slowest contender needs and no longer.
 */
export async function raceChildren(
  file: string,
  argLists: readonly (readonly string[])[],
  env: Readonly<Record<string, string>> = {},
  timeoutMs = 60_000,
): Promise<string[]> {
  const node = await childArgs(join(PACKAGE_DIR, file))
  const children: ChildProcess[] = []
  const timer = setTimeout(() => {
    for (const child of children) child.kill('SIGKILL')
  }, timeoutMs)
  try {
    const runs = argLists.map((args) => {
      const child = spawn(process.execPath, [...node, ...args], {
        cwd: PACKAGE_DIR,
        env: { ...process.env, ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
      })
      children.push(child)
      // A child that died before `go` closed its stdin: that is reported by its exit instead.
      child.stdin?.on('error', () => undefined)
      let stdout = ''
      let stderr = ''
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString()
      })
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout?.on('data', (chunk: Buffer) => {
          stdout += chunk.toString()
          if (/^ready$/m.test(stdout)) resolve()
        })
        child.once('close', (code, signal) =>
          reject(new Error(`${file} exited (${code ?? signal}) before ready: ${stderr}`)),
        )
      })
      const output = new Promise<string>((resolve, reject) => {
        child.once('error', reject)
        child.once('close', (code, signal) => {
          if (code === 0) resolve(stdout.slice(stdout.indexOf('ready\n') + 'ready\n'.length))
          else reject(new Error(`${file} exited (${code ?? signal}): ${stderr}`))
        })
      })
      return { child, ready, output }
    })
    // The rejection of a child that never got ready is reported by `ready`, not twice.
    for (const run of runs) run.output.catch(() => undefined)
    await Promise.all(runs.map((run) => run.ready))
    for (const run of runs) run.child.stdin?.end('go\n')
    return await Promise.all(runs.map((run) => run.output))
  } catch (error) {
    for (const child of children) child.kill('SIGKILL')
    throw error
  } finally {
    clearTimeout(timer)
  }
}
