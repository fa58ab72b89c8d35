import { type ChildProcess, spawn } from 'node:child_process'
import { join } from 'node:path'
import { childArgs, preparedChildArgs } from '@agent-state/backend-targets'
import { isAgentStateError } from '@agent-state/core'
import type { DaemonQueue, Delivery, DeliveryOptions } from '../src/index.js'
import { PACKAGE_DIR } from './child-process.js'

/**
 * Claims until a delivery comes back: after a delivery expired, an
 * `observer`-clock backend (S3) lets a contender take over only once it has
 * itself watched the old lease for its TTL, so the first claims may still
 * see `DELIVERY_IN_FLIGHT`.
 */
export async function claimEventually(
  queue: DaemonQueue,
  options: DeliveryOptions,
  timeoutMs = 20_000,
): Promise<Delivery> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      const delivery = await queue.claim(options)
      if (delivery !== null) return delivery
    } catch (error) {
      if (!isAgentStateError(error, 'DELIVERY_IN_FLIGHT')) throw error
    }
    if (Date.now() > deadline) throw new Error(`no delivery within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** Sleeps `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Builds the children {@link spawnChild} starts (files relative to the package): await it in `beforeAll`. */
export async function prepareChildren(...files: readonly string[]): Promise<void> {
  for (const file of files) await childArgs(join(PACKAGE_DIR, file))
}

/**
 * A TypeScript child process that the test can signal and talk to, started from the bundle
 * built by {@link prepareChildren} (`AGENT_STATE_CHILD_TSX=1`: through tsx). Spawned
 * synchronously, so a harness can start one from an `exit` handler.
 */
export function spawnChild(
  file: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): ChildProcess {
  return spawn(process.execPath, [...preparedChildArgs(join(PACKAGE_DIR, file)), ...args], {
    cwd: PACKAGE_DIR,
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
}

/** Resolves the first stdout line of `child` matching `pattern`; rejects if it exits first. */
export function waitForLine(
  child: ChildProcess,
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = ''
    let stderr = ''
    const timer = setTimeout(
      () => reject(new Error(`no line ${pattern} within ${timeoutMs} ms`)),
      timeoutMs,
    )
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString()
      const line = buffer.split('\n').find((candidate) => pattern.test(candidate))
      if (line !== undefined) {
        clearTimeout(timer)
        child.stdout?.off('data', onData)
        resolve(line)
      }
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.once('exit', (code, signal) => {
      clearTimeout(timer)
      reject(new Error(`child exited (${code ?? signal}) before ${pattern}: ${stderr}`))
    })
  })
}

/** Resolves when `child` has exited: its exit code, or the signal that ended it. */
export function exited(child: ChildProcess): Promise<number | string> {
  if (child.exitCode !== null) return Promise.resolve(child.exitCode)
  if (child.signalCode !== null) return Promise.resolve(child.signalCode)
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  )
}
