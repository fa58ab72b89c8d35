import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { inject } from 'vitest'
import { cliEnvironment } from './cli-bundle.js'

/** The command as users run it: `bin/agent-state.js`, here starting the sources through tsx. */
export const BIN = fileURLToPath(new URL('../bin/agent-state.js', import.meta.url))

/** What the global setup built (test/cli-bundle.ts); `null` with `AGENT_STATE_CLI_TSX=1`. */
export interface ProvidedCli {
  readonly bin: string
  readonly scripts: Readonly<Record<string, string>>
}

declare module 'vitest' {
  export interface ProvidedContext {
    cliBundle: ProvidedCli | null
  }
}

/** The global setup's bundle; throws (fails the test) when the global setup provided nothing. */
function provided(): ProvidedCli | null {
  const cli = inject('cliBundle')
  if (cli === undefined) throw new Error('the global setup did not run')
  return cli
}

/**
 * How {@link runCli} starts the command: `node <bin> …` with the environment it needs. The
 * bin is the copy of `bin/agent-state.js` that runs the bundle the global setup built
 * (test/cli-bundle.ts), or {@link BIN} itself (the sources through tsx) with
 * `AGENT_STATE_CLI_TSX=1`.
 */
export function cliCommand(env: Readonly<Record<string, string>> = {}): {
  readonly bin: string
  readonly env: NodeJS.ProcessEnv
} {
  const cli = provided()
  const merged = { ...process.env, ...env }
  return cli === null ? { bin: BIN, env: merged } : { bin: cli.bin, env: cliEnvironment(merged) }
}

/** What a finished CLI process left. */
export interface CliResult {
  readonly status: number | null
  readonly stdout: string
  readonly stderr: string
  /** Wall time, for reports only (never asserted). */
  readonly ms: number
}

/** Options of {@link runCli}. */
export interface RunOptions {
  readonly cwd?: string
  readonly env?: Readonly<Record<string, string>>
  /** Kill after this long (the test then fails on the status). Default 300 s. */
  readonly timeoutMs?: number
}

/**
 * Runs `agent-state …` as a real process through the bin wrapper (see {@link cliCommand}), with
 * stdout and stderr pipes (not a TTY).
 */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  const { bin, env } = cliCommand(options.env)
  return runNode([bin, ...args], { ...options, env })
}

/**
 * Runs `node <nodeArgs…>` with stdout and stderr pipes and collects what it left; killed with
 * SIGKILL after `timeoutMs` (default 300 s; the test then fails on the status).
 */
export function runNode(
  nodeArgs: readonly string[],
  options: {
    readonly cwd?: string
    readonly env?: NodeJS.ProcessEnv
    readonly timeoutMs?: number
  } = {},
): Promise<CliResult> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs], {
      cwd: options.cwd ?? process.cwd(),
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
    })
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 300_000)
    child.on('error', reject)
    child.on('close', (status) => {
      clearTimeout(timer)
      resolve({ status, stdout, stderr, ms: Math.round(performance.now() - started) })
    })
  })
}

const temps: string[] = []

/** A fresh private temp directory, removed by {@link removeTemps}. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}

/** Removes every directory {@link tempDir} made. */
export function removeTemps(): void {
  for (const dir of temps.splice(0)) rmSync(dir, { recursive: true, force: true })
}

/**
 * Runs a TypeScript file of this folder (`./seed-state.ts`) as a child process (to seed state):
 * its bundle from the global setup, or the file through tsx with `AGENT_STATE_CLI_TSX=1`.
 */
export function runScript(
  file: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<CliResult> {
  const source = fileURLToPath(new URL(file, import.meta.url))
  const cli = provided()
  const bundled = cli?.scripts[/([^/]+)\.ts$/.exec(file)?.[1] ?? '']
  if (cli !== null && bundled === undefined) throw new Error(`no bundle of ${file}`)
  const node =
    bundled === undefined
      ? ['--conditions=@agent-state/source', '--import', 'tsx', source]
      : ['--conditions=@agent-state/source', bundled]
  return runNode([...node, ...args], { env: { ...process.env, ...env } })
}
