import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AgentStateError, type Backend } from '@agent-state/core'
import { afterEach, beforeEach } from 'vitest'
import { createSqliteBackend } from '../src/index.js'

/** The package directory: children run from it so `--import tsx` resolves. */
export const PACKAGE_DIR = join(dirname(fileURLToPath(import.meta.url)), '..')

/** A fresh private temp directory and a function removing it. */
export function tempDir(): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-sqlite-'))
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) }
}

/** Options of `createSqliteBackend` other than the path. */
type OpenOptions = Partial<Parameters<typeof createSqliteBackend>[0]>

/**
 * Registers hooks giving each test of the enclosing `describe` a fresh
 * database path in its own temp directory; `open` creates backends on it that
 * are closed, and the directory removed, after the test.
 */
export function useTempDatabase(): {
  readonly path: string
  readonly dir: string
  open(options?: OpenOptions): Backend
  /** Closes `backend` after the test. */
  track<T extends Backend>(backend: T): T
} {
  let current: { dir: string; remove: () => void } | undefined
  const opened: Backend[] = []
  beforeEach(() => {
    current = tempDir()
  })
  afterEach(async () => {
    for (const backend of opened.splice(0)) await backend.close()
    current?.remove()
  })
  const dir = (): string => {
    if (current === undefined) throw new Error('useTempDatabase() is only usable inside a test')
    return current.dir
  }
  return {
    get path() {
      return join(dir(), 'state.db')
    },
    get dir() {
      return dir()
    },
    open(options = {}) {
      const backend = createSqliteBackend({ path: join(dir(), 'state.db'), ...options })
      opened.push(backend)
      return backend
    },
    track(backend) {
      opened.push(backend)
      return backend
    },
  }
}

/** Awaits `promise` and returns the `AgentStateError` it rejects with; fails if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<AgentStateError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof AgentStateError) return error
    throw new Error(`expected an AgentStateError, got ${String(error)}`)
  }
  throw new Error('expected a rejection, but the promise resolved')
}

/** Runs `fn` and returns the `AgentStateError` it throws synchronously; fails otherwise. */
export function thrown(fn: () => unknown): AgentStateError {
  try {
    fn()
  } catch (error) {
    if (error instanceof AgentStateError) return error
    throw new Error(`expected an AgentStateError, got ${String(error)}`)
  }
  throw new Error('expected a throw')
}

/** A TypeScript fixture run as a child process, with its output collected. */
export interface Child {
  readonly pid: number
  /** Resolves with the exit code (or signal) and everything written to stdout and stderr. */
  readonly done: Promise<{
    code: number | null
    signal: NodeJS.Signals | null
    stdout: string
    stderr: string
  }>
  /** Standard output so far. */
  output(): string
  /** Resolves once stdout matches `pattern`; rejects if the child exits first or after `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>
  kill(signal: NodeJS.Signals): void
}

/** Starts `test/fixtures/<name>` with `args`, loading TypeScript sources through tsx. */
export function startFixture(name: string, args: readonly string[]): Child {
  const child = spawn(
    process.execPath,
    [
      '--conditions=@agent-state/source',
      '--import',
      'tsx',
      join(PACKAGE_DIR, 'test', 'fixtures', name),
      ...args,
    ],
    { cwd: PACKAGE_DIR, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const done = new Promise<{
    code: number | null
    signal: NodeJS.Signals | null
    stdout: string
    stderr: string
  }>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr }))
  })
  let exited = false
  done.then(
    () => {
      exited = true
    },
    () => {
      exited = true
    },
  )
  return {
    pid: child.pid as number,
    done,
    output: () => stdout,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const started = Date.now()
        const poll = setInterval(() => {
          if (pattern.test(stdout)) {
            clearInterval(poll)
            resolve()
          } else if (exited || Date.now() - started > timeoutMs) {
            clearInterval(poll)
            reject(new Error(`child ${name} stopped or timed out before ${pattern}: ${stderr}`))
          }
        }, 10)
      })
    },
    kill: (signal) => {
      child.kill(signal)
    },
  }
}
