import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { childArgs, freshName, MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idempotencyKeyOf, inspectRun, readEffect } from '../src/index.js'
import { PACKAGE_DIR, runTs } from './child-process.js'
import { type Provider, startProvider } from './provider.js'

async function crashPhase(args: readonly string[], env: Readonly<Record<string, string>>) {
  const node = await childArgs(join(PACKAGE_DIR, 'examples/effect-ledger.ts'))
  return new Promise<NodeJS.Signals | null>((resolve, reject) => {
    const child = spawn(process.execPath, [...node, ...args], {
      cwd: PACKAGE_DIR,
      env: { ...process.env, ...env },
      stdio: 'ignore',
    })
    child.on('error', reject)
    child.on('close', (_code, signal) => resolve(signal))
  })
}

describe('the README effect-ledger example: crash after the target applied, resume reconciles', () => {
  let dir: string
  let provider: Provider
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-ledger-readme-'))
    provider = await startProvider()
  })
  afterAll(async () => {
    await provider.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it.each(MULTI_PROCESS_BACKENDS)(
    'on $name',
    async ({ target: make }) => {
      const { url, env, open } = make(dir)
      const runId = freshName('invoice')
      expect(await crashPhase(['crash', url, provider.url, runId], env)).toBe('SIGKILL')
      const backend = await open()
      try {
        const key = idempotencyKeyOf(runId, 'charge-invoice-42')
        // The crash hit after the provider applied the charge and before the ledger said so.
        expect((await readEffect(backend, runId, 'charge-invoice-42'))?.state).toBe('submitted')
        expect((await provider.log()).applied[key]).toBe(1)
        const out = await runTs(
          'examples/effect-ledger.ts',
          ['resume', url, provider.url, runId],
          60_000,
          env,
        )
        const summary = JSON.parse(out.trim()) as {
          attempts: number
          decisions: { rule: string }[]
        }
        expect(summary.attempts).toBe(2)
        expect(summary.decisions.map((d) => d.rule)).toEqual(['reconciler:confirmed'])
        expect((await provider.log()).applied[key]).toBe(1)
        const view = await inspectRun(backend, runId)
        expect(view.head.status).toBe('completed')
        expect(view.steps).toBe(2)
        expect(view.lastStep?.outputs).toEqual({ receipt: (await provider.log()).results[key] })
        expect(view.head.audit.map((e) => e.event)).toEqual([
          'run_created',
          'revalidation_passed',
          'attempt_started',
          'effect_reconciled',
          'revalidation_passed',
          'run_completed',
        ])
      } finally {
        await backend.close()
      }
    },
    60_000,
  )
})
