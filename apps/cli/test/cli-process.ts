import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The command as users run it. */
export const BIN = fileURLToPath(new URL('../bin/agent-state.js', import.meta.url))

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

/** Runs `agent-state …` as a real process, with stdout and stderr pipes (not a TTY). */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? process.cwd(),
      env: { ...process.env, ...options.env },
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

/** Runs a TypeScript file of this package as a child process (to seed state). */
export function runScript(
  file: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<CliResult> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--conditions=@agent-state/source',
        '--import',
        'tsx',
        fileURLToPath(new URL(file, import.meta.url)),
        ...args,
      ],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c
    })
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c
    })
    child.on('error', reject)
    child.on('close', (status) =>
      resolve({ status, stdout, stderr, ms: Math.round(performance.now() - started) }),
    )
  })
}
