import type { Backend, Clock, Lease } from '@agent-state/core'
import type { EffectHandlers, Run } from '../run/run.js'
import { assertRunId, loadHead } from '../run/run-attempt.js'
import { openRun, type RevalidationCheck } from '../run/run-open.js'

/**
 * How a worker opens or reopens the run it owns (`worker.openRun`,
 * `worker.reopenRun`, `resumeWorker`'s `run`): what `openRun` needs besides
 * the ownership, which is always the worker's current lease.
 */
export interface WorkerRunOptions {
  /** Effect handlers by kind; they reconcile what the previous owner left `submitted` or `unknown`. */
  readonly handlers: EffectHandlers
  /** Checks run at every open, after reconciliation queries and before any dispatch. */
  readonly revalidate?: readonly RevalidationCheck[]
}

/**
 * Opens run `runId` owned by a worker's lease `parentLease` (the run's
 * leases are taken by the same holder and kept subordinate to it; the run's
 * attempt is a new one, so the ledger reconciles the previous owner's
 * incomplete effects before anything else). A run recorded `completed`
 * is not reopened: `null`.
 *
 * @throws what `openRun` throws (`RUN_OWNED`, `RUN_NEEDS_ATTENTION`, `LEASE_LOST` when
 *   `parentLease` is no longer the worker's current lease, ...).
 */
export async function openWorkerRun(
  backend: Backend,
  runId: string,
  parentLease: Lease,
  clock: Clock,
  options: WorkerRunOptions,
): Promise<Run | null> {
  assertRunId(runId)
  // Only the run's owner completes it, and that is this lease's holder: no race with the open.
  const stored = await loadHead(backend, runId)
  if (stored?.head.status === 'completed') return null
  return openRun(backend, runId, {
    handlers: options.handlers,
    ...(options.revalidate === undefined ? {} : { revalidate: options.revalidate }),
    parentLease,
    clock,
  })
}
