import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isAgentStateError } from '@agent-state/core'
import { afterEach, expect } from 'vitest'

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

/** A fresh temp directory, removed after the test. */
export function tempRoot(): string {
  const root = mkdtempSync(join(tmpdir(), 'agent-state-fs-'))
  roots.push(root)
  return root
}

/** Absolute path of a fixture script. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url))
}

/** Starts a TypeScript fixture in a child process, as the contract suite does. */
export function startChild(name: string, args: readonly string[]): ChildProcess {
  return spawn(
    process.execPath,
    ['--conditions=@agent-state/source', '--import', 'tsx', fixture(name), ...args],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
}

/** Resolves with the first stdout line that starts with `prefix`. */
export function waitForLine(child: ChildProcess, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = ''
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString('utf8')
      for (const line of buffer.split('\n')) {
        if (line.startsWith(prefix)) {
          child.stdout?.off('data', onData)
          resolve(line)
          return
        }
      }
    }
    child.stdout?.on('data', onData)
    child.once('exit', (code) => reject(new Error(`child exited (${code}) before "${prefix}"`)))
  })
}

/** Resolves with the exit code (or signal) of a child. */
export function exitOf(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  if (child.signalCode !== null) return Promise.resolve(child.signalCode)
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  )
}

/** Asserts that `promise` rejects with an AgentStateError of `code`; returns the error. */
export async function expectCode(promise: Promise<unknown>, code: string) {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error, `expected a ${code} error`).toBeDefined()
  if (!isAgentStateError(error)) throw error
  expect(error.code).toBe(code)
  return error
}

export const text = (value: string): Uint8Array => new TextEncoder().encode(value)
export const untext = (value: Uint8Array): string => new TextDecoder().decode(value)
