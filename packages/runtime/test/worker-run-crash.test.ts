/**
 * A worker that owns a run is killed (SIGKILL) mid-effect in a child
 * process; the test process, another owner with the SAME holder name,
 * recovers the worker with `run` once the dead owner's lease ran out, and
 * continues the run's effects: the effect left `submitted` is reconciled
 * through the target (a real separate process recording every call,
 * provider.ts), nothing confirmed runs twice. On SQLite, the filesystem
 * and Redis.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshName, MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { isAgentStateError } from '@agent-state/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  idempotencyKeyOf,
  inspectRun,
  readEffect,
  resumeWorker,
  type Worker,
} from '../src/index.js'
import { runTs } from './child-process.js'
import { type Provider, paymentHandler, startProvider } from './provider.js'

/**
 * The dead owner's lease: the recovery waits it out. Long enough for the child to reach e2 on a
 * loaded CI host (2 s ran out once before its e2 write, at load 25, and the child died of
 * LEASE_LOST instead of the provider's kill).
 */
const LEASE_TTL_MS = 6000
const BACKENDS = MULTI_PROCESS_BACKENDS.filter((b) => ['sqlite', 'fs', 'redis'].includes(b.name))

describe.each(BACKENDS)(
  'a worker with a run killed mid-effect, recovered elsewhere, on $name',
  ({ target: make }) => {
    let dir: string
    let provider: Provider
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'agent-state-worker-run-crash-'))
      provider = await startProvider()
    })
    afterAll(async () => {
      await provider.stop()
      rmSync(dir, { recursive: true, force: true })
    })

    it('continues the run where it stopped: e2 reconciled, not repeated; e3 dispatched once', async () => {
      const target = make(dir)
      const namespace = freshName('wrc')
      const backend = await target.open(namespace)
      try {
        const died = await runTs(
          'test/fixtures/worker-run-crash-child.ts',
          [target.url, namespace, provider.url, 'w1', 'r1', String(LEASE_TTL_MS)],
          60_000,
          target.env,
        ).then(
          (out) => `exited normally: ${out}`,
          (error: Error) => error.message,
        )
        // Killed by a signal (no exit code), by the provider, inside e2's dispatch.
        expect(died).toMatch(/exited with null/)
        const key = (effectId: string) => idempotencyKeyOf('r1', effectId)
        const before = await provider.log()
        expect(before.kills).toEqual([key('e2')])
        expect((await readEffect(backend, 'r1', 'e2'))?.state).toBe('submitted')
        const deadAttempt = (await inspectRun(backend, 'r1')).head.attempt

        const handlers = { pay: paymentHandler(provider.url) }
        let worker: Worker | undefined
        for (let tries = 0; worker === undefined; tries++) {
          try {
            worker = await resumeWorker(backend, 'w1', {
              holder: 'agent-1',
              recoverRunning: true,
              leaseTtlMs: 60_000,
              run: { handlers },
            })
          } catch (error) {
            if (!isAgentStateError(error, 'CONCURRENT_RESUME') || tries > 100) throw error
            await new Promise((resolve) => setTimeout(resolve, 200))
          }
        }
        const run = worker.run
        expect(run?.attempt.holder).toBe(deadAttempt.holder)
        expect(run?.attempt.token).toBeGreaterThan(deadAttempt.token)
        expect(worker.state).toEqual({ paid: ['e1'] })
        for (const [effectId, amount] of [
          ['e1', 10],
          ['e2', 20],
          ['e3', 30],
        ] as const) {
          await run?.effect('pay', effectId, { amount })
        }
        await run?.complete()
        await worker.complete({ paid: 3 })

        const log = await provider.log()
        expect(log.applied).toEqual({ [key('e1')]: 1, [key('e2')]: 1, [key('e3')]: 1 })
        const e2 = await readEffect(backend, 'r1', 'e2')
        expect(e2?.state).toBe('confirmed')
        expect(e2?.result).toEqual(log.results[key('e2')])
        expect(e2?.history.map((h) => h.reason)).toContain('reconciler:confirmed')
        expect((await inspectRun(backend, 'r1')).head.status).toBe('completed')
        const events = worker.audit.map((entry) => entry.event)
        expect(events).toEqual(expect.arrayContaining(['worker_recovered', 'run_reopened']))
      } finally {
        await backend.close()
      }
    }, 120_000)
  },
)
