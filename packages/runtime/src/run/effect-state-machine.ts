/**
 * The effect state machine: the states of one effect of a run, the transitions between them,
 * the order in which each transition becomes durable, and the recovery rules applied to an
 * effect found incomplete. Everything that moves an effect record is in this file; the
 * records themselves (schemas, verification, listing) are in `effect-ledger.ts` and
 * `run-records.ts`. The specification is `docs/runtime/runs-and-effects.md`.
 *
 * States and transitions (each one recorded in the effect's `history`):
 *
 *   (none) ──store──▶ planned ──▶ submitted ──▶ confirmed   (the handler answered)
 *                                      │   ├──▶ failed      (a definite rejection: `effectRejected`)
 *                                      │   └──▶ unknown     (timeout, lost answer, result not JSON,
 *                                      │                     or the confirm write did not land)
 *   submitted, unknown ──recovery──▶ confirmed (reconciler: applied)
 *                                 ├─▶ submitted again (absent + retry-safe, or operator retry)
 *                                 └─▶ unknown (anything else: needs an operator)
 *   submitted, unknown ──resolveEffect (operator)──▶ confirmed | failed
 *                                                 └─▶ unknown, retry allowed (one re-dispatch)
 *
 * `confirmed` and `failed` are final: never left, never re-dispatched.
 *
 * Durability order (every write is fenced by the run's lease and conditional on the version
 * read, so a superseded attempt changes nothing):
 *
 * 1. `planned` is created (create-only), then its incomplete-marker: a marker without a record
 *    is always a loss, and a crash before the marker leaves an effect that was never submitted.
 * 2. `submitted` is stored before the handler's dispatch runs: a crash during the call leaves
 *    `submitted`, which recovery treats as possibly applied, never as safe to repeat.
 * 3. The outcome (`confirmed` with its result, `failed`, or `unknown`) is stored after the call;
 *    only a final record then has its marker removed (and its lease no longer renewed). A crash
 *    between the two leaves a stale marker on a final record, which recovery drops (`final`).
 * 4. A record write that enters or leaves `unknown` moves the effect's `unknown` marker
 *    (`effect-state-index.ts`), bracketed by a `moving` marker, so a crash leaves the effect
 *    ambiguous in the listing, never under a wrong marker; the next owner repairs it before
 *    recovery. Every other write (the normal path) moves no marker.
 *
 * Recovery rules ({@link recoverEffect}, at every resume and on a repeated `effect` call):
 *
 * - `confirmed` / `failed` → final (only a stale marker to drop).
 * - `planned` → safe to dispatch (it was never submitted).
 * - `submitted` / `unknown`, in this order: no handler for the kind → `unknown`, needs
 *   attention; a retry allowed by an operator → re-dispatch; otherwise ask the kind's
 *   reconciler by idempotency key: `confirmed` → record the result; `absent` and the handler is
 *   `retrySafe` → re-dispatch with the same idempotency key; `absent` and not retry-safe,
 *   `unknown`, a reconciler error, or a result that is not JSON → record `unknown`, needs
 *   attention (`RUN_NEEDS_ATTENTION`). Recovery never records `failed`: only a definite
 *   rejection or an operator does.
 */
import { type AgentStateError, isAgentStateError } from '@agent-state/core'
import { checksumOf, type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { runEffectKey, runOpenMarkerKey } from '../shared/layout.js'
import {
  type EffectCall,
  type EffectHandler,
  idempotencyKeyOf,
  isRejection,
  type ReconcileAnswer,
} from './effect.js'
import { type LedgerContext, type LoadedEffect, loadEffect } from './effect-ledger.js'
import { moveUnknownMarker } from './effect-state-index.js'
import { encodeRunRecord } from './run-codec.js'
import {
  type EffectError,
  type EffectRecord,
  type EffectState,
  effectRecordSchema,
  MAX_EFFECT_HISTORY,
} from './run-records.js'

const FINAL: ReadonlySet<EffectState> = new Set(['confirmed', 'failed'])

/** Whether the effect's outcome is settled (`confirmed` or `failed`). */
export function isFinal(state: EffectState): boolean {
  return FINAL.has(state)
}

/**
 * What `Run.effect(kind, effectId, request)` does with the effect's record, by its state:
 * none → store `planned`, then dispatch; `planned` → dispatch; `confirmed` → the stored result,
 * without dispatching; `failed` → `EFFECT_FAILED`; `submitted` or `unknown` → the recovery
 * rules ({@link recoverEffect}), then the stored result, a re-dispatch, or `RUN_NEEDS_ATTENTION`.
 * `request` is validated JSON; `handler` is the kind's.
 *
 * @throws `EFFECT_CONFLICT` when the record has another kind or request checksum.
 */
export async function performEffect(
  ctx: LedgerContext,
  handler: EffectHandler,
  kind: string,
  effectId: string,
  request: JsonValue,
): Promise<JsonValue> {
  const loaded = await loadEffect(ctx.backend, ctx.runId, effectId, ctx.token)
  if (loaded === null) {
    const planned = await storeEffect(ctx, plannedEffect(ctx, kind, effectId, request), null)
    return dispatchEffect(ctx, planned, handler, 'dispatch')
  }
  const { record } = loaded
  if (record.kind !== kind || record.requestChecksum !== checksumOf(request)) {
    throw runtimeError(
      'EFFECT_CONFLICT',
      `Effect ${effectId} is recorded with another kind or request; effect ids must be unique in the run`,
      { runId: ctx.runId, effectId, recordedKind: record.kind, kind },
    )
  }
  if (record.state === 'confirmed') return record.result
  if (record.state === 'failed')
    throw failedError(record, record.error ?? { message: 'failed', code: null })
  if (record.state === 'planned') return dispatchEffect(ctx, loaded, handler, 'dispatch')
  const recovered = await recoverEffect(ctx, loaded, handler)
  const { decision } = recovered
  if (decision.outcome === 'confirmed') return recovered.loaded.record.result
  if (decision.outcome === 'redispatch')
    return dispatchEffect(ctx, recovered.loaded, handler, `redispatch:${decision.rule}`)
  throw needsAttention(ctx.runId, [
    { effectId, kind, state: recovered.loaded.record.state, rule: decision.rule },
  ])
}

// --- Transitions and their durability ---

/** A new, `planned` effect record (not yet stored). */
export function plannedEffect(
  ctx: LedgerContext,
  kind: string,
  effectId: string,
  request: JsonValue,
): EffectRecord {
  const now = new Date(ctx.clock()).toISOString()
  return {
    runId: ctx.runId,
    effectId,
    kind,
    idempotencyKey: idempotencyKeyOf(ctx.runId, effectId),
    requestChecksum: checksumOf(request),
    request,
    state: 'planned',
    result: null,
    error: null,
    token: ctx.token,
    retryAllowed: false,
    history: [{ state: 'planned', at: now, attemptId: ctx.attemptId, reason: 'planned' }],
    createdAt: now,
    updatedAt: now,
  }
}

/** `record` moved to `state` by this attempt, with the outcome fields and a history entry. */
export function transition(
  ctx: LedgerContext,
  record: EffectRecord,
  state: EffectState,
  reason: string,
  outcome: { result?: JsonValue; error?: EffectError; retryAllowed?: boolean } = {},
): EffectRecord {
  const now = new Date(ctx.clock()).toISOString()
  const history = [...record.history, { state, at: now, attemptId: ctx.attemptId, reason }]
  return {
    ...record,
    state,
    result: state === 'confirmed' ? (outcome.result ?? null) : null,
    error: state === 'failed' ? (outcome.error ?? { message: 'failed', code: null }) : null,
    token: ctx.token,
    retryAllowed: outcome.retryAllowed ?? false,
    history: history.length > MAX_EFFECT_HISTORY ? history.slice(-MAX_EFFECT_HISTORY) : history,
    updatedAt: now,
  }
}

/**
 * Stores `record` with one fenced, conditional write: create-only for a new
 * effect (`from` null), else over the version `from` was read at. Its `unknown` marker
 * follows when it enters or leaves `unknown` (effect-state-index.ts). A final record's lease is no longer
 * renewed and its incomplete-marker is removed.
 */
export async function storeEffect(
  ctx: LedgerContext,
  record: EffectRecord,
  from: LoadedEffect | null,
): Promise<LoadedEffect> {
  const key = runEffectKey(ctx.runId, record.effectId)
  const lease = await ctx.ownership.leaseFor(key)
  const version = from?.version ?? null
  // Entering or leaving `unknown`, the marker moves around the record write in the order
  // that leaves any crash window visible to a listing (effect-state-index.ts); else no call.
  const meta = await moveUnknownMarker(ctx, record, from?.record.state ?? null, () =>
    ctx.backend.put(key, encodeRunRecord('effect', effectRecordSchema, record), {
      ...(version === null ? { ifNoneMatch: '*' as const } : { ifMatch: version }),
      lease,
      writer: { writerId: lease.holder },
    }),
  )
  if (version === null) {
    // After the planned record: a marker without a record is then always a
    // loss, and a crash before the marker leaves an effect never submitted.
    await ctx.backend
      .put(runOpenMarkerKey(ctx.runId, record.effectId), new Uint8Array(0), {
        ifNoneMatch: '*',
      })
      .catch((error: unknown) => {
        if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
      })
  }
  if (isFinal(record.state)) {
    ctx.ownership.forget(key)
    await ctx.backend.delete(runOpenMarkerKey(ctx.runId, record.effectId))
  }
  return { record, version: meta.version }
}

// --- Dispatch: planned or re-dispatched → submitted → confirmed | failed | unknown ---

/** The call a dispatch or reconciler receives. */
export function effectCall(
  ctx: LedgerContext,
  record: EffectRecord,
  signal: AbortSignal,
): EffectCall {
  return {
    runId: ctx.runId,
    effectId: record.effectId,
    idempotencyKey: record.idempotencyKey,
    request: record.request,
    attemptId: ctx.attemptId,
    signal,
  }
}

function errorOf(error: unknown): EffectError {
  if (isRejection(error)) {
    const code = error.context.rejectionCode
    return { message: error.message, code: typeof code === 'string' ? code : null }
  }
  return { message: error instanceof Error ? error.message : String(error), code: null }
}

async function callWithTimeout(
  handler: EffectHandler,
  call: (signal: AbortSignal) => EffectCall,
): Promise<JsonValue> {
  const controller = new AbortController()
  const timeoutMs = handler.timeoutMs
  if (timeoutMs === undefined) return handler.dispatch(call(controller.signal))
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort()
      reject(
        runtimeError('EFFECT_UNKNOWN', `The dispatch did not answer within ${timeoutMs} ms`, {
          reason: 'timeout',
        }),
      )
    }, timeoutMs)
  })
  try {
    return await Promise.race([handler.dispatch(call(controller.signal)), timeout])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Dispatches a `planned` (or retry-allowed) effect: `submitted` is stored
 * before the call; afterwards `confirmed` with the result, `failed` on a
 * definite rejection, `unknown` on anything else (timeout, lost answer).
 *
 * @throws `EFFECT_FAILED`, `EFFECT_UNKNOWN`, or the ledger write's error (`LEASE_LOST`...).
 */
export async function dispatchEffect(
  ctx: LedgerContext,
  loaded: LoadedEffect,
  handler: EffectHandler,
  reason: string,
): Promise<JsonValue> {
  const submitted = await storeEffect(
    ctx,
    transition(ctx, loaded.record, 'submitted', reason),
    loaded,
  )
  let result: JsonValue
  try {
    const answer = await callWithTimeout(handler, (signal) =>
      effectCall(ctx, submitted.record, signal),
    )
    const checked = jsonValueSchema.safeParse(answer)
    if (!checked.success) {
      // Applied at the target, but the result cannot be stored: reconciliation must supply it.
      throw runtimeError(
        'EFFECT_UNKNOWN',
        'The dispatch resolved with a result that is not plain JSON',
        {
          reason: 'result_not_json',
        },
      )
    }
    result = checked.data
  } catch (error) {
    const rejected = isRejection(error)
    const state = rejected ? 'failed' : 'unknown'
    const why = rejected
      ? 'rejected'
      : isAgentStateError(error, 'EFFECT_UNKNOWN')
        ? String(error.context.reason ?? 'timeout')
        : 'dispatch_error'
    try {
      await storeEffect(
        ctx,
        transition(ctx, submitted.record, state, why, { error: errorOf(error) }),
        submitted,
      )
    } catch (storeError) {
      // Still `submitted` when this write did not land: recovery treats it as unknown.
      if (isAgentStateError(storeError, 'LEASE_LOST')) throw storeError
    }
    if (rejected) throw failedError(submitted.record, errorOf(error), error)
    throw unknownError(submitted.record, why, error)
  }
  try {
    await storeEffect(
      ctx,
      transition(ctx, submitted.record, 'confirmed', 'dispatch', { result }),
      submitted,
    )
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_LOST')) throw error
    // The target confirmed but the ledger may not say so: recovery reconciles it.
    throw unknownError(submitted.record, 'confirm_not_recorded', error)
  }
  return result
}

// --- Recovery rules ---

/** How recovery classified one incomplete effect. */
export const RECOVERY_OUTCOMES = [
  /** Planned, never submitted: safe to dispatch when the step calls it again. */
  'safe_to_dispatch',
  /** The reconciler found it applied; recorded `confirmed` with its result. */
  'confirmed',
  /** Absent at the target and retry-safe (or retry allowed by an operator): dispatch again, same idempotency key. */
  'redispatch',
  /** Cannot be decided without an operator. */
  'needs_attention',
  /** Already final (a marker left by a crash after the outcome was recorded). */
  'final',
] as const

/** One recovery decision, as it goes into the audit trail. */
export interface RecoveryDecision {
  readonly effectId: string
  readonly kind: string
  /** The state the effect was found in. */
  readonly found: EffectState
  readonly outcome: (typeof RECOVERY_OUTCOMES)[number]
  /** The rule that decided, e.g. `reconciler:absent+retry_safe`. */
  readonly rule: string
}

/** The decision plus the effect as it now stands. */
export interface Recovered {
  readonly decision: RecoveryDecision
  readonly loaded: LoadedEffect
}

function decide(
  loaded: LoadedEffect,
  outcome: RecoveryDecision['outcome'],
  rule: string,
  found: EffectState = loaded.record.state,
): Recovered {
  const { effectId, kind } = loaded.record
  return { decision: { effectId, kind, found, outcome, rule }, loaded }
}

/**
 * Applies the recovery rules to one effect (see the top of this file): planned → safe to
 * dispatch; submitted or unknown → ask the reconciler by idempotency key:
 * confirmed is recorded, absent and retry-safe is dispatched again, anything
 * else (absent and unsafe, still unknown, reconciler error, no handler)
 * needs attention and is recorded `unknown`, never `failed`.
 */
export async function recoverEffect(
  ctx: LedgerContext,
  loaded: LoadedEffect,
  handler: EffectHandler | undefined,
): Promise<Recovered> {
  const { state } = loaded.record
  if (isFinal(state)) return decide(loaded, 'final', 'already_final')
  if (state === 'planned') return decide(loaded, 'safe_to_dispatch', 'planned_not_submitted')
  if (handler === undefined) return markUnknown(ctx, loaded, 'no_handler_for_kind')
  if (loaded.record.retryAllowed) return decide(loaded, 'redispatch', 'operator:retry_allowed')
  let answer: ReconcileAnswer
  try {
    answer = await handler.reconcile(effectCall(ctx, loaded.record, new AbortController().signal))
  } catch {
    return markUnknown(ctx, loaded, 'reconciler_error')
  }
  if (answer.status === 'confirmed') {
    const checked = jsonValueSchema.safeParse(answer.result)
    if (!checked.success) return markUnknown(ctx, loaded, 'reconciler_result_not_json')
    const result: JsonValue = checked.data
    const stored = await storeEffect(
      ctx,
      transition(ctx, loaded.record, 'confirmed', 'reconciler:confirmed', { result }),
      loaded,
    )
    return {
      decision: decide(loaded, 'confirmed', 'reconciler:confirmed').decision,
      loaded: stored,
    }
  }
  if (answer.status === 'absent' && handler.retrySafe) {
    return decide(loaded, 'redispatch', 'reconciler:absent+retry_safe')
  }
  return markUnknown(
    ctx,
    loaded,
    answer.status === 'absent' ? 'reconciler:absent+not_retry_safe' : 'reconciler:unknown',
  )
}

async function markUnknown(
  ctx: LedgerContext,
  loaded: LoadedEffect,
  rule: string,
): Promise<Recovered> {
  const found = loaded.record.state
  const stored =
    found === 'unknown'
      ? loaded
      : await storeEffect(ctx, transition(ctx, loaded.record, 'unknown', rule), loaded)
  return { decision: decide(stored, 'needs_attention', rule, found).decision, loaded: stored }
}

/**
 * Re-dispatches an effect recovery decided `redispatch` (absent at the target and retry-safe,
 * or retry allowed by an operator), with the same idempotency key, and says how it ended.
 */
export async function redispatchEffect(
  ctx: LedgerContext,
  loaded: LoadedEffect,
  handler: EffectHandler,
  rule: string,
): Promise<'confirmed' | 'failed' | 'unknown'> {
  try {
    await dispatchEffect(ctx, loaded, handler, `redispatch:${rule}`)
    return 'confirmed'
  } catch (error) {
    if (isAgentStateError(error, 'EFFECT_FAILED')) return 'failed'
    if (isAgentStateError(error, 'EFFECT_UNKNOWN')) return 'unknown'
    throw error
  }
}

// --- The errors the machine ends in ---

/** `EFFECT_FAILED` for a recorded failure. */
export function failedError(record: EffectRecord, error: EffectError, cause?: unknown) {
  return runtimeError(
    'EFFECT_FAILED',
    `Effect ${record.effectId} failed: ${error.message}`,
    { runId: record.runId, effectId: record.effectId, rejectionCode: error.code },
    cause,
  )
}

/** `EFFECT_UNKNOWN`: the outcome must be reconciled before anything continues. */
export function unknownError(record: EffectRecord, why: string, cause?: unknown) {
  return runtimeError(
    'EFFECT_UNKNOWN',
    `The outcome of effect ${record.effectId} is unknown (${why}); resume the run to reconcile it`,
    { runId: record.runId, effectId: record.effectId, reason: why },
    cause,
  )
}

/** `RUN_NEEDS_ATTENTION` listing effects an operator must resolve. */
export function needsAttention(
  runId: string,
  effects: readonly { effectId: string; kind: string; state: string; rule: string }[],
): AgentStateError {
  return runtimeError(
    'RUN_NEEDS_ATTENTION',
    `Run ${runId} needs attention: the outcome of ${effects.map((e) => e.effectId).join(', ')} cannot be reconciled; resolve each with resolveEffect()`,
    { runId, effects: effects.map((e) => ({ ...e })) },
  )
}
