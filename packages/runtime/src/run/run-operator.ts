import { type Backend, mapLimited } from '@agent-state/core'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { type LoadedEffect, listIncomplete, loadEffect } from './effect-ledger.js'
import {
  isUnsettled,
  listStates,
  UNSETTLED_STATES,
  type UnsettledState,
} from './effect-state-index.js'
import { storeEffect, transition } from './effect-state-machine.js'
import {
  assertRunId,
  auditEntry,
  beginAttempt,
  loadHead,
  type RunOwnerOptions,
  storeHead,
  withAudit,
} from './run-attempt.js'
import type { EffectRecord, RunHead, StepRecord } from './run-records.js'
import { loadSteps, locateSteps } from './run-steps.js'

/** An operator's explicit decision about an effect that needs attention. */
export type EffectResolution =
  /** The operator verified the effect happened: record it `confirmed` with this result. */
  | { readonly action: 'confirm'; readonly result: JsonValue; readonly reason: string }
  /** The operator verified it did not and must not happen: record it `failed`. */
  | { readonly action: 'fail'; readonly message: string; readonly reason: string }
  /** The operator allows one more dispatch with the same idempotency key at the next open. */
  | { readonly action: 'retry'; readonly reason: string }

/**
 * Records an operator's resolution of an effect in `submitted` or `unknown`
 * state. It owns the run while it does (a new attempt, audited as
 * `operator_resolved` with the reason), so it fails with `RUN_OWNED` while
 * the run is open elsewhere.
 *
 * @throws `INVALID_RESOLUTION` for an effect that is not submitted or unknown,
 *   `RUN_RECORD_MISSING` for an effect that does not exist, `RUN_OWNED`, `RUN_NOT_FOUND`.
 */
export async function resolveEffect(
  backend: Backend,
  runId: string,
  effectId: string,
  resolution: EffectResolution,
  options: RunOwnerOptions = {},
): Promise<EffectRecord> {
  const attempt = await beginAttempt(backend, runId, options, false)
  const { ctx } = attempt
  try {
    const loaded = await loadEffect(backend, runId, effectId, ctx.token)
    if (loaded === null) {
      throw runtimeError('RUN_RECORD_MISSING', `Run ${runId} has no effect ${effectId}`, {
        runId,
        effectId,
      })
    }
    const { state } = loaded.record
    if (state !== 'submitted' && state !== 'unknown') {
      throw runtimeError(
        'INVALID_RESOLUTION',
        `Effect ${effectId} is ${state}; only submitted or unknown effects are resolved`,
        {
          runId,
          effectId,
          state,
        },
      )
    }
    const reason = `operator:${resolution.action}`
    let next: EffectRecord
    if (resolution.action === 'confirm') {
      const result = jsonValueSchema.parse(resolution.result)
      next = transition(ctx, loaded.record, 'confirmed', reason, { result })
    } else if (resolution.action === 'fail') {
      next = transition(ctx, loaded.record, 'failed', reason, {
        error: { message: resolution.message, code: 'operator' },
      })
    } else {
      next = transition(ctx, loaded.record, 'unknown', reason, { retryAllowed: true })
    }
    const stored = await storeEffect(ctx, next, loaded)
    const now = new Date(ctx.clock()).toISOString()
    await storeHead(
      attempt,
      withAudit(
        attempt.head,
        [
          auditEntry(ctx, 'operator_resolved', {
            effectId,
            action: resolution.action,
            reason: resolution.reason,
            from: state,
          }),
        ],
        now,
      ),
    )
    return stored.record
  } finally {
    await ctx.ownership.release()
  }
}

/** A read-only view of a run. */
export interface RunView {
  readonly head: RunHead
  readonly steps: number
  readonly lastStep: StepRecord | null
  /** Effects not yet confirmed or failed. */
  readonly incomplete: readonly EffectRecord[]
}

/**
 * Reads and verifies a run without owning it (no lease, no write): for
 * operators and dashboards. `RUN_NOT_FOUND` when it does not exist.
 */
export async function inspectRun(backend: Backend, runId: string): Promise<RunView> {
  assertRunId(runId)
  const stored = await loadHead(backend, runId)
  if (stored === null) throw runtimeError('RUN_NOT_FOUND', `Run ${runId} does not exist`, { runId })
  const token = stored.head.attempt.token
  const steps = await loadSteps(backend, runId, token)
  const incomplete = (await listIncomplete(backend, runId, token))
    .map((loaded: LoadedEffect) => loaded.record)
    .filter((record) => record.state !== 'confirmed' && record.state !== 'failed')
  return { head: stored.head, steps: steps.count, lastStep: steps.last, incomplete }
}

/** A run's head and position, without its effects: {@link inspectRunHead}. */
export type RunHeadView = Omit<RunView, 'incomplete'>

/**
 * Reads and verifies a run's head and finds its newest step (and so its position) without
 * reading any effect, and without listing every step (`locateSteps`: one listing of at most
 * 1,000 step keys, then about 2·log2(n/1,000) key lookups for n steps): for views that page
 * the run's effects and steps themselves. Read-only. `RUN_NOT_FOUND` when it does not exist.
 */
export async function inspectRunHead(backend: Backend, runId: string): Promise<RunHeadView> {
  assertRunId(runId)
  const stored = await loadHead(backend, runId)
  if (stored === null) throw runtimeError('RUN_NOT_FOUND', `Run ${runId} does not exist`, { runId })
  const steps = await locateSteps(backend, runId, stored.head.attempt.token)
  return { head: stored.head, steps: steps.count, lastStep: steps.last }
}

/** One effect's verified record, or `null`; read-only. */
export async function readEffect(
  backend: Backend,
  runId: string,
  effectId: string,
): Promise<EffectRecord | null> {
  assertRunId(runId)
  const stored = await loadHead(backend, runId)
  if (stored === null) throw runtimeError('RUN_NOT_FOUND', `Run ${runId} does not exist`, { runId })
  return (await loadEffect(backend, runId, effectId, stored.head.attempt.token))?.record ?? null
}

/**
 * Effects of a run by their verified records, in the order asked (`null` for an id with no
 * record), reading the head once: a page of `n` effects costs `n + 1` reads, where `n`
 * calls of {@link readEffect} cost `2n`. Read-only.
 *
 * @throws `RUN_NOT_FOUND`, `RUN_RECORD_*` (the first unreadable record).
 */
export async function readEffects(
  backend: Backend,
  runId: string,
  effectIds: readonly string[],
): Promise<(EffectRecord | null)[]> {
  assertRunId(runId)
  const stored = await loadHead(backend, runId)
  if (stored === null) throw runtimeError('RUN_NOT_FOUND', `Run ${runId} does not exist`, { runId })
  const token = stored.head.attempt.token
  return Promise.all(
    effectIds.map(async (id) => (await loadEffect(backend, runId, id, token))?.record ?? null),
  )
}

/** How many effects `summarizeRun` reads for its first unsettled effects unless told. */
export const RUN_SUMMARY_EFFECTS = 20
/**
 * How many in-flight (planned or submitted) effects `summarizeRun` reads to split them by
 * state unless told; beyond it the split is counted over the first ones by id (`splitOf`).
 */
export const RUN_SUMMARY_IN_FLIGHT = 100
/** How many records `summarizeRun` reads side by side. */
const SUMMARY_READS_IN_FLIGHT = 16

/** A run at a glance: {@link summarizeRun}. */
export interface RunSummary {
  readonly head: RunHead
  readonly steps: number
  readonly lastStep: StepRecord | null
  /**
   * Unsettled effects by state. `unknown` is exact (counted from the index's listing);
   * `submitted` and `planned` are exact when `splitOf` is `null`, else counted over the
   * `splitOf` in-flight effects read (the first by id), so they add up to at most `splitOf`.
   */
  readonly unsettled: Readonly<Record<UnsettledState, number>>
  /** Effects planned or submitted, exact: the incomplete-markers without an `unknown` marker. */
  readonly inFlight: number
  /** `null`: every in-flight effect was read; else how many were (more are in flight). */
  readonly splitOf: number | null
  /**
   * Whether the run keeps its index of unknown effects (its head's `unknownIndex`); a run not
   * yet opened by a runtime that keeps it is counted by reading every incomplete effect.
   */
  readonly indexed: boolean
  /** The first unsettled effects (up to the limit): unknown, then submitted, then planned, each by id. */
  readonly first: readonly EffectRecord[]
}

/**
 * Reads a run for a dashboard row without reading all its effects: the head, the newest
 * step, its unknown effects counted from the listing of its index (effect-state-index.ts),
 * its effects in flight (planned or submitted) counted as the other incomplete-markers, and
 * split by state by reading at most `inFlightBound` of them ({@link RUN_SUMMARY_IN_FLIGHT};
 * beyond it the split is over the first ones, `splitOf`), and the records of the first
 * `limit` unsettled ones ({@link RUN_SUMMARY_EFFECTS}). So a run costs at most
 * `2 + limit + inFlightBound` reads whatever its size, plus one read per effect a crash left
 * in a marker move. A run written before the index (until its next open) is read whole, one
 * read per incomplete effect, as {@link inspectRun} does. Read-only.
 *
 * @throws `RUN_NOT_FOUND`, `RUN_RECORD_*` as {@link inspectRun}.
 */
export async function summarizeRun(
  backend: Backend,
  runId: string,
  limit: number = RUN_SUMMARY_EFFECTS,
  inFlightBound: number = RUN_SUMMARY_IN_FLIGHT,
): Promise<RunSummary> {
  assertRunId(runId)
  const stored = await loadHead(backend, runId)
  if (stored === null) throw runtimeError('RUN_NOT_FOUND', `Run ${runId} does not exist`, { runId })
  const token = stored.head.attempt.token
  const indexed = stored.head.unknownIndex === true
  const [steps, listing] = await Promise.all([
    loadSteps(backend, runId, token),
    listStates(backend, runId),
  ])
  // Without the index an unknown effect has no marker: every incomplete effect is read.
  const candidates = indexed ? listing.inFlight : [...listing.unknown, ...listing.inFlight]
  const sample = indexed ? candidates.slice(0, inFlightBound) : candidates
  const toRead = [...listing.ambiguous, ...sample.map((effectId) => ({ effectId, marked: true }))]
  const loaded = await mapLimited(toRead, SUMMARY_READS_IN_FLIGHT, async ({ effectId, marked }) => {
    const found = await loadEffect(backend, runId, effectId, token)
    if (found === null && marked) throw missingRecord(runId, effectId)
    return found
  })
  const byState: Record<UnsettledState, string[]> = {
    unknown: indexed ? [...listing.unknown] : [],
    submitted: [],
    planned: [],
  }
  const read = new Map<string, EffectRecord>()
  for (const found of loaded) {
    // A settled effect (a stale marker), or a marker whose create never landed: not unsettled.
    if (found === null || !isUnsettled(found.record.state)) continue
    read.set(found.record.effectId, found.record)
    byState[found.record.state].push(found.record.effectId)
  }
  const unread = candidates.length - sample.length
  const firstIds = UNSETTLED_STATES.flatMap((state) => byState[state].sort()).slice(0, limit)
  const first = await mapLimited(firstIds, SUMMARY_READS_IN_FLIGHT, async (effectId) => {
    const known = read.get(effectId) ?? (await loadEffect(backend, runId, effectId, token))?.record
    if (known === undefined) throw missingRecord(runId, effectId)
    return known
  })
  return {
    head: stored.head,
    steps: steps.count,
    lastStep: steps.last,
    unsettled: {
      unknown: byState.unknown.length,
      submitted: byState.submitted.length,
      planned: byState.planned.length,
    },
    inFlight: byState.submitted.length + byState.planned.length + unread,
    splitOf: unread > 0 ? sample.length : null,
    indexed,
    first,
  }
}

/** `RUN_RECORD_MISSING` for an effect marked incomplete whose record is gone. */
function missingRecord(runId: string, effectId: string) {
  return runtimeError(
    'RUN_RECORD_MISSING',
    `Effect ${effectId} of run ${runId} is marked incomplete but its record is missing`,
    { runId, effectId },
  )
}
