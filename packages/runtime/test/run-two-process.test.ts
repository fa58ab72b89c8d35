import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { childArgs, freshName, MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idempotencyKeyOf, inspectRun, openRun, readEffect } from '../src/index.js'
import { runEffectKey, runHeadKey } from '../src/internal.js'
import { PACKAGE_DIR } from './child-process.js'
import { type Provider, paymentHandler, startProvider } from './provider.js'
import { raceChildren } from './start-line.js'

describe.each(MULTI_PROCESS_BACKENDS)('two processes and one run on $name', ({ target: make }) => {
  let dir: string
  let provider: Provider
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-run-race-'))
    provider = await startProvider()
  })
  afterAll(async () => {
    await provider.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('two processes resume at once: exactly one proceeds, the other gets RUN_OWNED and records nothing', async () => {
    const target = make(dir)
    const namespace = freshName('race')
    const backend = await target.open(namespace)
    try {
      for (let round = 0; round < 3; round++) {
        const runId = `race-${round}`
        const created = await openRun(backend, runId, { handlers: {}, holder: 'parent' })
        await created.close()
        const outputs = await raceChildren(
          'test/fixtures/run-race-child.ts',
          ['child-a', 'child-b'].map((holder) => [
            'race',
            target.url,
            namespace,
            runId,
            holder,
            provider.url,
          ]),
          target.env,
        )
        const results = outputs.map(
          (out) => JSON.parse(out.trim()) as { outcome: string; attempt?: string },
        )
        const winners = results.filter((r) => r.outcome === 'won')
        expect(winners, JSON.stringify(results)).toHaveLength(1)
        expect(results.find((r) => r.outcome !== 'won')?.outcome).toBe('RUN_OWNED')
        const view = await inspectRun(backend, runId)
        expect(view.head.attemptCount).toBe(2)
        expect(view.head.attempt.attemptId).toBe(winners[0]?.attempt)
        const attempts = new Set(view.head.audit.map((e) => e.attemptId))
        expect([...attempts].sort()).toEqual(
          [created.attempt.attemptId, winners[0]?.attempt].sort(),
        )
        expect(view.steps).toBe(1)
        expect((await provider.log()).applied[idempotencyKeyOf(runId, 'race-e')]).toBe(1)
        console.info(`round ${round}: ${JSON.stringify(results)}`)
      }
    } finally {
      await backend.close()
    }
  }, 180_000)

  it('a SIGSTOPped owner that wakes after the takeover cannot record an outcome or a step', async () => {
    const target = make(dir)
    const namespace = freshName('stop')
    const backend = await target.open(namespace)
    const runId = 'stopped'
    const node = await childArgs(join(PACKAGE_DIR, 'test/fixtures/run-race-child.ts'))
    const child = spawn(
      process.execPath,
      [...node, 'stall', target.url, namespace, runId, 'sleeper', provider.url],
      {
        cwd: PACKAGE_DIR,
        env: { ...process.env, ...target.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString()
          if (stdout.includes('"ready"')) resolve()
        })
        child.on('close', (code, signal) =>
          reject(new Error(`the child exited early (${code ?? signal}): ${stdout} ${stderr}`)),
        )
      })
      child.kill('SIGSTOP')
      await new Promise((resolve) => setTimeout(resolve, 1500))
      // The takeover: the sleeper's leases expired; the effect it left `submitted` is absent at the target.
      const next = await openRun(backend, runId, {
        handlers: { pay: paymentHandler(provider.url, { headers: () => ({ 'x-dedupe': '1' }) }) },
        holder: 'taker',
      })
      const effectVersion = (await backend.head(runEffectKey(runId, 'stalled')))?.version
      const headVersion = (await backend.head(runHeadKey(runId)))?.version
      expect((await readEffect(backend, runId, 'stalled'))?.state).toBe('confirmed')
      child.kill('SIGCONT')
      expect(await exited).toBe(0)
      const verdict = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}')
      expect(verdict).toEqual({ effect: 'LEASE_LOST', step: 'LEASE_LOST' })
      expect((await backend.head(runEffectKey(runId, 'stalled')))?.version).toBe(effectVersion)
      expect((await backend.head(runHeadKey(runId)))?.version).toBe(headVersion)
      const view = await inspectRun(backend, runId)
      expect(view.steps).toBe(0)
      const log = await provider.log()
      const key = idempotencyKeyOf(runId, 'stalled')
      // Its late call carried the same idempotency key, so the provider applied the payment once.
      expect(log.applied[key]).toBe(1)
      expect(log.duplicates[key]).toBe(1)
      await next.close()
    } finally {
      child.kill('SIGKILL')
      await backend.close()
    }
  }, 120_000)
})
