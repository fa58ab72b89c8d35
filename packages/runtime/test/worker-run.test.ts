/**
 * Worker and run together (docs/runtime/workers.md, Worker and run): a
 * resumed worker reopens the run it owns under its new lease, and a stale
 * previous owner with the same holder name is fenced from the run. On
 * memory, the filesystem and SQLite (a manual lease clock) and Redis (its
 * server's clock). worker-run-mutants.test.ts proves the checks.
 */
import { createMemoryBackend } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import {
  countingTarget,
  RUN_BACKENDS,
  resumeReopensRun,
  staleOwnerFenced,
  wakeReopensRun,
} from './worker-run-scenarios.js'

describe.each(RUN_BACKENDS)('worker and run together on $name', (kind) => {
  it("a wake dispatcher's `workers.run` hands onResumed the worker with its run reopened", async () => {
    expect(await wakeReopensRun(runtime, kind)).toEqual({
      reopened: true,
      attemptCount: 2,
      e1: { receipt: 'r-e1' },
      applied: { e1: 1 },
      runAudit: ['run_opened', 'run_reopened'],
    })
  })

  it('a resume with `run` reopens the run under the new lease; confirmed effects do not run again', async () => {
    const outcome = await resumeReopensRun(runtime, kind)
    // The suspend released the run with the worker: nobody holds its head.
    expect(outcome.runLeaseAfterSuspend).toBeNull()
    expect(outcome).toMatchObject({
      resumedRunId: 'r1',
      reopened: true,
      attemptCount: 2,
      results: [{ receipt: 'r-e1' }, { receipt: 'r-e2' }],
      applied: { e1: 1, e2: 1 },
      runAudit: ['run_opened', 'run_reopened'],
      secondRun: 'INVALID_ARGUMENT',
    })
    // Without `run` the resume leaves it to reopenRun, which opens attempt 3.
    expect(outcome.lateReopen).toEqual({ before: false, attemptCount: 3 })
    // A completed run is not reopened: documented no-op, audited (after the resume's and reopenRun's reopens).
    expect(outcome.afterCompleted).toEqual({
      run: false,
      runAudit: ['run_opened', 'run_reopened', 'run_reopened', 'run_not_reopened'],
    })
    // A worker that owns no run resumes as before.
    expect(outcome.noRun).toEqual({
      run: false,
      runId: null,
      runAudit: [],
      reopen: 'INVALID_ARGUMENT',
    })
  })

  it('a stale owner with the same holder name is fenced from the run; the reconciled effect is not repeated', async () => {
    const outcome = await staleOwnerFenced(runtime, kind)
    expect(outcome).toEqual({
      resume: 'resolved',
      reopened: true,
      e2Rule: 'reconciler:confirmed',
      stale: { e2Ack: 'LEASE_LOST', e3: 'LEASE_LOST', checkpoint: 'LEASE_LOST' },
      attempts: { sameHolder: true, newerToken: true },
      applied: { e1: 1, e2: 1, e3: 1 },
      runStatus: 'completed',
      workerStatus: 'done',
    })
  })
})

describe('a worker that retakes its lapsed lease', () => {
  it('releases the run held under the lapsed lease; reopenRun continues it under the retaken one', async () => {
    // Real time on memory: reclaim judges the lease's age on the local monotonic clock. The test
    // is about a lapse, so the 1 s lease is meant to run out.
    const backend = createMemoryBackend({ namespace: 'wr-reclaim' })
    try {
      const target = countingTarget()
      const worker = await runtime.startWorker(backend, { workerId: 'w1', leaseTtlMs: 1000 })
      const first = await worker.openRun('r1', { handlers: target.handlers })
      await first.effect('pay', 'e1', { amount: 1 })
      const lapsed = worker.lease?.token ?? 0
      await new Promise((resolve) => setTimeout(resolve, 1100))
      await worker.reclaim()
      expect(worker.lease?.token).toBeGreaterThan(lapsed)
      expect(worker.run).toBeNull()
      const run = await worker.reopenRun({ handlers: target.handlers })
      expect(run.attemptCount).toBe(2)
      expect(await run.effect('pay', 'e1', { amount: 1 })).toEqual({ receipt: 'r-e1' })
      expect(await run.effect('pay', 'e2', { amount: 2 })).toEqual({ receipt: 'r-e2' })
      expect(target.applied).toEqual({ e1: 1, e2: 1 })
      await worker.complete()
    } finally {
      await backend.close()
    }
  })
})
