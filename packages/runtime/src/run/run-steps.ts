import { type Backend, walkList } from '@agent-state/core'
import { runtimeError } from '../shared/errors.js'
import { runStepKey, runStepsPrefix } from '../shared/layout.js'
import type { LedgerContext } from './effect-ledger.js'
import { decodeRunRecord, encodeRunRecord } from './run-codec.js'
import { type StepRecord, stepRecordSchema } from './run-records.js'

/** The committed steps of a run: how many, and the newest (which holds the run's position). */
export interface StepsState {
  readonly count: number
  readonly last: StepRecord | null
}

/** Reads and verifies step `seq`. */
export async function readStep(
  backend: Backend,
  runId: string,
  seq: number,
  newestToken: number,
): Promise<StepRecord | null> {
  const key = runStepKey(runId, seq)
  const found = await backend.get(key)
  if (found === null) return null
  const step = decodeRunRecord(found.value, 'step', stepRecordSchema, key)
  if (step.runId !== runId || step.seq !== seq) {
    throw runtimeError(
      'RUN_RECORD_CONTRADICTORY',
      `The step record ${key} names another run or step`,
      {
        key,
        runId,
        seq,
        storedRunId: step.runId,
        storedSeq: step.seq,
      },
    )
  }
  if (step.token > newestToken) {
    throw runtimeError(
      'RUN_RECORD_CONTRADICTORY',
      `The step record ${key} was written by an attempt newer than the run\u2019s newest attempt`,
      { key, token: step.token, newestToken },
    )
  }
  return step
}

/**
 * Finds the newest committed step by listing step keys (metadata only) and
 * reading the last one. The keys must run 1..n without a gap.
 *
 * @throws `RUN_RECORD_MISSING` for a gap; `RUN_RECORD_*` for a bad record.
 */
export async function loadSteps(
  backend: Backend,
  runId: string,
  newestToken: number,
): Promise<StepsState> {
  const prefix = runStepsPrefix(runId)
  let count = 0
  for await (const page of walkList(backend, { prefix })) {
    for (const entry of page.entries) {
      count++
      if (entry.key !== runStepKey(runId, count)) {
        throw runtimeError(
          'RUN_RECORD_MISSING',
          `Run ${runId} lacks step ${count} (found ${entry.key})`,
          {
            runId,
            seq: count,
            found: entry.key,
          },
        )
      }
    }
  }
  if (count === 0) return { count, last: null }
  const last = await readStep(backend, runId, count, newestToken)
  if (last === null) {
    throw runtimeError(
      'RUN_RECORD_MISSING',
      `Step ${count} of run ${runId} vanished while resuming`,
      {
        runId,
        seq: count,
      },
    )
  }
  return { count, last }
}

/**
 * Commits a step: its outputs and the run's new position in one record,
 * written create-only and fenced, so the step either committed whole or not
 * at all, and only once.
 */
export async function storeStep(ctx: LedgerContext, step: StepRecord): Promise<void> {
  const key = runStepKey(ctx.runId, step.seq)
  const lease = await ctx.ownership.leaseFor(key)
  await ctx.backend.put(key, encodeRunRecord('step', stepRecordSchema, step), {
    ifNoneMatch: '*',
    lease,
    writer: { writerId: lease.holder },
  })
  ctx.ownership.forget(key)
}
