/**
 * The checks of worker-run.test.ts against deliberately broken runtimes
 * (mutants.ts): each mutant replaces one worker module and must make its
 * check see the failure it exists to catch. On memory and SQLite (manual
 * lease clocks: no waiting).
 */
import type { Backend, Clock, Lease } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import type * as ResumeWorker from '../src/worker/resume-worker.js'
import type * as WorkerRun from '../src/worker/worker-run.js'
import { mutated, unmockAll } from './mutants.js'
import {
  RUN_BACKENDS,
  resumeReopensRun,
  staleOwnerFenced,
  wakeReopensRun,
} from './worker-run-scenarios.js'

const RESUME_WORKER = '../src/worker/resume-worker.ts'
const WORKER_RUN = '../src/worker/worker-run.ts'

afterEach(unmockAll)

/** Mutant: a resume that does not reopen the worker's run (the caller's discipline, as before). */
const noReopen = (original: Record<string, unknown>) => ({
  ...original,
  resumeWorker: (backend: Backend, workerId: string, options: ResumeWorker.ResumeWorkerOptions) => {
    const { run: _ignored, ...rest } = options
    return (original.resumeWorker as typeof ResumeWorker.resumeWorker)(backend, workerId, rest)
  },
})

/** Mutant: the run reopened under the previous owner's lease (its token), not the resumed one's. */
const oldToken = (stale: { lease: Lease | null }) => (original: Record<string, unknown>) => ({
  ...original,
  openWorkerRun: (
    backend: Backend,
    runId: string,
    parentLease: Lease,
    clock: Clock,
    options: WorkerRun.WorkerRunOptions,
  ) =>
    (original.openWorkerRun as typeof WorkerRun.openWorkerRun)(
      backend,
      runId,
      stale.lease ?? parentLease,
      clock,
      options,
    ),
})

/** Mutant: a wake's resume that drops the dispatcher's `workers.run` (onResumed reopens by hand). */
const wakeWithoutRun = (original: Record<string, unknown>) => ({
  ...original,
  resumeWorkerOnWake: (
    backend: Backend,
    workerId: string,
    options: ResumeWorker.ResumeWorkerOptions,
    wake: Parameters<typeof ResumeWorker.resumeWorkerOnWake>[3],
  ) => {
    const { run: _ignored, ...rest } = options
    return (original.resumeWorkerOnWake as typeof ResumeWorker.resumeWorkerOnWake)(
      backend,
      workerId,
      rest,
      wake,
    )
  },
})

const KINDS = RUN_BACKENDS.filter((kind) => kind.name === 'memory' || kind.name === 'sqlite')

describe.each(KINDS)('worker-and-run mutants on $name', (kind) => {
  it('a resume that does not reopen the run: the reopen check sees no run and no audit', async () => {
    const outcome = await resumeReopensRun(await mutated(RESUME_WORKER, noReopen), kind)
    // worker-run.test.ts expects reopened, attempt 2, e2 applied once, ['run_reopened'].
    expect(outcome).toMatchObject({ reopened: false, attemptCount: null, runAudit: ['run_opened'] })
    expect(outcome.applied).toEqual({ e1: 1 })
  })

  it('a resume that does not reopen the run: the fencing check sees the woken worker not continue its run', async () => {
    const outcome = await staleOwnerFenced(await mutated(RESUME_WORKER, noReopen), kind)
    // worker-run.test.ts expects reopened, e2 reconciled, e3 applied once, the run completed.
    expect(outcome).toMatchObject({ reopened: false, e2Rule: null, runStatus: 'open' })
    expect(outcome.applied.e3).toBeUndefined()
  })

  it('the run reopened under the old token (same holder name): the fencing check sees the resume refused', async () => {
    const stale = { lease: null as Lease | null }
    const rt = await mutated(WORKER_RUN, oldToken(stale))
    const outcome = await staleOwnerFenced(rt, kind, (lease) => {
      stale.lease = lease
    })
    // worker-run.test.ts expects the resume to succeed and reopen the run.
    expect(outcome).toMatchObject({ resume: 'LEASE_LOST', reopened: false })
  })

  it("a wake's resume that drops `workers.run`: onResumed gets the worker without its run", async () => {
    const outcome = await wakeReopensRun(await mutated(RESUME_WORKER, wakeWithoutRun), kind)
    // worker-run.test.ts expects reopened, attempt 2, ['run_opened', 'run_reopened'].
    expect(outcome).toMatchObject({ reopened: false, attemptCount: null, runAudit: ['run_opened'] })
  })
})
