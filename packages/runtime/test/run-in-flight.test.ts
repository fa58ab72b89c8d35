import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { childArgs, freshName, MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { type Backend, isAgentStateError } from '@agent-state/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idempotencyKeyOf, openRun, type Run, readEffect } from '../src/index.js'
import { PACKAGE_DIR } from './child-process.js'
import { type Provider, paymentHandler, startProvider } from './provider.js'

/**
 * A call still in flight when the next owner reconciles: the first owner (a
 * real process) dispatched the effect, the target (a real process) took the
 * request in and holds it, unapplied, and the owner is SIGKILLed. The next
 * owner's reconcile asks the target, which answers `absent` (true then), and
 * only after that does the held request land. The kill -9 cycles of
 * `run-crash.test.ts` kill at fixed points (before the call, after the target
 * applied it); this is the case between. On SQLite (one backend: the race is
 * the target's, not the store's).
 */
const LEASE_TTL_MS = 1000
const sqlite = MULTI_PROCESS_BACKENDS.find((b) => b.name === 'sqlite')
if (sqlite === undefined) throw new Error('no sqlite multi-process backend')

let dir: string
let provider: Provider
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-in-flight-'))
  provider = await startProvider()
})
afterAll(async () => {
  await provider.stop()
  rmSync(dir, { recursive: true, force: true })
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Runs the first owner (test/fixtures/in-flight-child.ts) until the provider holds its call, then
 * SIGKILLs it.
 */
async function killWithCallInFlight(
  url: string,
  env: Readonly<Record<string, string>>,
  namespace: string,
  runId: string,
  mode: 'dedupe' | 'plain',
): Promise<void> {
  const node = await childArgs(join(PACKAGE_DIR, 'test/fixtures/in-flight-child.ts'))
  const child = spawn(
    process.execPath,
    [...node, url, namespace, provider.url, runId, mode, String(LEASE_TTL_MS)],
    { cwd: PACKAGE_DIR, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString()
  })
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('close', (_code, signal) => resolve(signal)),
  )
  const key = idempotencyKeyOf(runId, 'charge')
  const deadline = Date.now() + 60_000
  while (!(await provider.log()).held.includes(key)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`the first owner never got its call to the provider: ${output}`)
    }
    await sleep(20)
  }
  child.kill('SIGKILL')
  expect(await exited, output).toBe('SIGKILL')
}

/** Opens the run as its next owner, waiting out the dead owner's lease. */
async function takeOver(backend: Backend, runId: string, retrySafe: boolean, dedupe: boolean) {
  const pay = paymentHandler(provider.url, {
    retrySafe,
    headers: () => (dedupe ? { 'x-dedupe': '1' } : {}),
  })
  for (let tries = 0; ; tries++) {
    try {
      return await openRun(backend, runId, { handlers: { pay }, holder: 'next-owner' })
    } catch (error) {
      if (!isAgentStateError(error, 'RUN_OWNED') || tries > 100) throw error
      await sleep(Math.max(20, Math.min(2000, Number(error.context.expiresAt) - Date.now() + 20)))
    }
  }
}

/** What the next owner's open decided about the effect (its rule) and did. */
function decisionsOf(run: Run): string[] {
  const mine = run.attempt.attemptId
  return run.audit
    .filter((entry) => entry.attemptId === mine)
    .map((entry) =>
      typeof entry.detail.rule === 'string' ? `${entry.event} ${entry.detail.rule}` : entry.event,
    )
}

describe('an effect call still in flight when the next owner reconciles (SQLite, real processes)', () => {
  it('a deduplicating target with retrySafe: the re-dispatch and the late call apply once', async () => {
    const target = (sqlite as (typeof MULTI_PROCESS_BACKENDS)[number]).target(dir)
    const namespace = freshName('in-flight')
    const runId = 'dedupe'
    const key = idempotencyKeyOf(runId, 'charge')
    await killWithCallInFlight(target.url, target.env, namespace, runId, 'dedupe')
    const backend = await target.open(namespace)
    try {
      const run = await takeOver(backend, runId, true, true)
      // The target answered `absent` (the call was held, not applied): the open re-dispatched.
      expect(decisionsOf(run)).toEqual([
        'attempt_started',
        'effect_reconciled reconciler:absent+retry_safe',
        'effect_redispatched reconciler:absent+retry_safe',
      ])
      expect((await readEffect(backend, runId, 'charge'))?.state).toBe('confirmed')
      expect((await provider.log()).held).toEqual([key])
      // Now the call that was in flight lands.
      expect(await provider.releaseHeld()).toBe(1)
      const log = await provider.log()
      expect(log.applied[key]).toBe(1)
      expect(log.duplicates[key]).toBe(1)
      const effect = await readEffect(backend, runId, 'charge')
      expect(effect?.result).toEqual(log.results[key])
      await run.close()
    } finally {
      await provider.releaseHeld()
      await backend.close()
    }
  }, 120_000)

  it('a target that does not deduplicate, with retrySafe: the effect is applied twice (why retrySafe needs a deduplicating target)', async () => {
    const target = (sqlite as (typeof MULTI_PROCESS_BACKENDS)[number]).target(dir)
    const namespace = freshName('in-flight')
    const runId = 'plain'
    const key = idempotencyKeyOf(runId, 'charge')
    await killWithCallInFlight(target.url, target.env, namespace, runId, 'plain')
    const backend = await target.open(namespace)
    try {
      const run = await takeOver(backend, runId, true, false)
      expect(decisionsOf(run)).toEqual([
        'attempt_started',
        'effect_reconciled reconciler:absent+retry_safe',
        'effect_redispatched reconciler:absent+retry_safe',
      ])
      expect(await provider.releaseHeld()).toBe(1)
      const log = await provider.log()
      // The double application the README warns of: the ledger cannot prevent it.
      expect(log.applied[key]).toBe(2)
      expect(log.duplicates[key]).toBeUndefined()
      await run.close()
    } finally {
      await provider.releaseHeld()
      await backend.close()
    }
  }, 120_000)

  it('a target that does not deduplicate, not retrySafe: nothing is re-dispatched, the run needs attention, the late call applies once', async () => {
    const target = (sqlite as (typeof MULTI_PROCESS_BACKENDS)[number]).target(dir)
    const namespace = freshName('in-flight')
    const runId = 'not-retry-safe'
    const key = idempotencyKeyOf(runId, 'charge')
    await killWithCallInFlight(target.url, target.env, namespace, runId, 'plain')
    const backend = await target.open(namespace)
    try {
      let refused: unknown
      try {
        await takeOver(backend, runId, false, false)
      } catch (error) {
        refused = error
      }
      expect(isAgentStateError(refused, 'RUN_NEEDS_ATTENTION'), String(refused)).toBe(true)
      expect((refused as { context: unknown }).context).toMatchObject({
        effects: [
          { effectId: 'charge', state: 'unknown', rule: 'reconciler:absent+not_retry_safe' },
        ],
      })
      expect((await provider.log()).applied[key]).toBeUndefined()
      expect(await provider.releaseHeld()).toBe(1)
      expect((await provider.log()).applied[key]).toBe(1)
    } finally {
      await provider.releaseHeld()
      await backend.close()
    }
  }, 120_000)
})
