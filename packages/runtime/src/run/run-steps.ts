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
      if (entry.key !== runStepKey(runId, count)) throw stepGap(runId, count, entry.key)
    }
  }
  if (count === 0) return { count, last: null }
  const last = await readStep(backend, runId, count, newestToken)
  if (last === null) throw stepVanished(runId, count)
  return { count, last }
}

/** `RUN_RECORD_MISSING` for step `seq` missing where `found` was listed instead. */
function stepGap(runId: string, seq: number, found: string) {
  return runtimeError('RUN_RECORD_MISSING', `Run ${runId} lacks step ${seq} (found ${found})`, {
    runId,
    seq,
    found,
  })
}

/** `RUN_RECORD_MISSING` for the newest step, listed, then gone when read. */
function stepVanished(runId: string, seq: number) {
  return runtimeError('RUN_RECORD_MISSING', `Step ${seq} of run ${runId} vanished while resuming`, {
    runId,
    seq,
  })
}

/** Step keys {@link locateSteps} lists before it searches by key instead. */
export const LOCATE_STEPS_LISTED = 1000

/**
 * Finds the newest committed step for a read-only view at a cost that does not grow with the
 * run: one listing of at most {@link LOCATE_STEPS_LISTED} step keys (checked 1..k without a
 * gap, as {@link loadSteps} checks them all) and, when more follow, a galloping search by
 * `head` of the numbered keys past them (k·2, k·4, ... until one is absent, then halving
 * between the last present and the first absent): about 2·log2(n/k) heads for n steps, then
 * one read of the newest. Past the listed page the keys are taken to run without a gap, as
 * the runtime writes them (each step create-only after its predecessor); {@link loadSteps}
 * is the full check an owner of the run makes on open.
 *
 * @throws `RUN_RECORD_MISSING` for a gap in the listed page; `RUN_RECORD_*` for a bad record.
 */
export async function locateSteps(
  backend: Backend,
  runId: string,
  newestToken: number,
): Promise<StepsState> {
  const page = await backend.list({ prefix: runStepsPrefix(runId), limit: LOCATE_STEPS_LISTED })
  let count = 0
  for (const entry of page.entries) {
    count++
    if (entry.key !== runStepKey(runId, count)) throw stepGap(runId, count, entry.key)
  }
  if (page.cursor !== undefined && count > 0) {
    const exists = async (seq: number) => (await backend.head(runStepKey(runId, seq))) !== null
    let absent = count * 2
    while (await exists(absent)) {
      count = absent
      absent *= 2
    }
    // count exists, absent does not: halve the gap between them.
    while (absent - count > 1) {
      const middle = Math.floor((count + absent) / 2)
      if (await exists(middle)) count = middle
      else absent = middle
    }
  }
  if (count === 0) return { count, last: null }
  const last = await readStep(backend, runId, count, newestToken)
  if (last === null) throw stepVanished(runId, count)
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
