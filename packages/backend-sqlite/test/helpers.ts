import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { AgentStateError, type Backend } from '@agent-state/core'
import Database from 'better-sqlite3'
import { afterEach, beforeEach, expect } from 'vitest'
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

/** A small seeded generator (mulberry32), so a failing run can be replayed from its seed. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** The name SQLite gives the index of the entries table's primary key (namespace, key). */
export const PRIMARY_KEY_INDEX = 'sqlite_autoindex_agent_state_entries_1'

/**
 * Lowers by `by` the cell count of the root page of index `name` in the
 * (closed) database at `path` (a leaf for a small database): SQLite then
 * silently skips the page's last entries, the damage a byte flip in a page
 * header can do.
 */
export function dropIndexEntries(path: string, name: string, by: number): void {
  const raw = new Database(path, { readonly: true })
  const root = raw.prepare('SELECT rootpage FROM sqlite_master WHERE name = ?').pluck().get(name)
  raw.close()
  const file = readFileSync(path)
  const pageSize = file.readUInt16BE(16)
  const header = ((root as number) - 1) * pageSize + (root === 1 ? 100 : 0)
  // 0x0a: an index leaf page; its cell count is the 2 bytes at offset 3.
  expect(file[header]).toBe(0x0a)
  file.writeUInt16BE(file.readUInt16BE(header + 3) - by, header + 3)
  writeFileSync(path, file)
}
