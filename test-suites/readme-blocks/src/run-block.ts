import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** What a finished child process printed. */
export interface CommandResult {
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Options of {@link runCommand}. */
export interface RunCommandOptions {
  /** Working directory: usually the package whose README is tested. */
  readonly cwd: string
  /** Added to this process's environment. */
  readonly env?: Readonly<Record<string, string>>
  /** Killed (SIGKILL) after this long, in milliseconds. Default 60 000. */
  readonly timeoutMs?: number
  /**
   * Pass this process's `NODE_PATH` on to the child. Default `false`: it is removed, because the
   * pnpm shim that starts the tests sets it to every hoisted package of the workspace, which lets
   * a block import packages its own package does not have, where a user's process would fail. A
   * `NODE_PATH` given in `env` is passed either way.
   */
  readonly keepNodePath?: boolean
}

/** The child's environment: this process's (without `NODE_PATH` unless kept), plus `env`. */
function childEnv(options: RunCommandOptions): NodeJS.ProcessEnv {
  const env = { ...process.env }
  if (options.keepNodePath !== true) delete env.NODE_PATH
  return { ...env, ...options.env }
}

/**
 * Runs a command line exactly as a README writes it, without a shell (`node`
 * means this Node), in this process's environment without `NODE_PATH` (see
 * {@link RunCommandOptions.keepNodePath}). Resolves whatever the exit code;
 * callers assert it, so a failure shows the child's output.
 */
export function runCommand(
  argv: readonly string[],
  options: RunCommandOptions,
): Promise<CommandResult> {
  const [command, ...args] = argv
  if (command === undefined) return Promise.reject(new Error('empty command line'))
  return new Promise((resolve, reject) => {
    const child = spawn(command === 'node' ? process.execPath : command, args, {
      cwd: options.cwd,
      env: childEnv(options),
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
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000)
    child.on('error', (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.on('close', (exitCode) => {
      clearTimeout(timer)
      resolve({ exitCode, stdout, stderr })
    })
  })
}

/** Options of {@link runTsBlock}. */
export interface RunTsBlockOptions extends RunCommandOptions {
  /**
   * Exact text replacements applied to the block before it runs (a README's
   * `'sqlite:./state.db'` becomes a temp file; a `redis://127.0.0.1:6379` the
   * test server's URL). Each `from` must occur in the block, so a README edit
   * that drops it fails loudly instead of running against the wrong target.
   */
  readonly substitutions?: Readonly<Record<string, string>>
}

/**
 * Runs a TypeScript block as a user would run it: written to a file inside
 * `cwd` (so its `@agent-state/*` imports resolve as in that package), started
 * with `node --import tsx` under the `@agent-state/source` condition (no build
 * needed), the file removed afterwards.
 */
export async function runTsBlock(code: string, options: RunTsBlockOptions): Promise<CommandResult> {
  let text = code
  for (const [from, to] of Object.entries(options.substitutions ?? {})) {
    if (!text.includes(from))
      throw new Error(`the block no longer contains ${JSON.stringify(from)}`)
    text = text.replaceAll(from, to)
  }
  const dir = mkdtempSync(join(options.cwd, '.readme-block-'))
  try {
    const file = join(dir, 'block.ts')
    writeFileSync(file, text)
    return await runCommand(
      ['node', '--conditions=@agent-state/source', '--import', 'tsx', file],
      options,
    )
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
