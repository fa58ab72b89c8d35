import { type Backend, type Clock, isAgentStateError } from '@agent-state/core'
import { checksumOf, type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { runEffectKey, runOpenMarkerKey } from '../shared/layout.js'
import { type EffectCall, type EffectHandler, idempotencyKeyOf, isRejection } from './effect.js'
import { decodeRunRecord, encodeRunRecord } from './run-codec.js'
import type { RunOwnership } from './run-ownership.js'
import {
  type EffectError,
  type EffectRecord,
  type EffectState,
  effectRecordSchema,
  MAX_EFFECT_HISTORY,
} from './run-records.js'

/** A verified effect record with the backend version it was read at. */
export interface LoadedEffect {
  readonly record: EffectRecord
  readonly version: string
}

const FINAL: ReadonlySet<EffectState> = new Set(['confirmed', 'failed'])

/** Whether the effect's outcome is settled (`confirmed` or `failed`). */
export function isFinal(state: EffectState): boolean {
  return FINAL.has(state)
}

/**
 * Checks what the schema cannot: the record belongs to its key and run, its
 * idempotency key is the derived one, its outcome fields match its state, and
 * no attempt newer than the run's newest one wrote it.
 */
function checkConsistent(
  record: EffectRecord,
  runId: string,
  effectId: string,
  newestToken: number,
) {
  const key = runEffectKey(runId, effectId)
  const contradiction = (what: string, extra: Record<string, unknown> = {}) =>
    runtimeError('RUN_RECORD_CONTRADICTORY', `The effect record ${key} ${what}`, {
      key,
      runId,
      effectId,
      ...extra,
    })
  if (record.runId !== runId || record.effectId !== effectId) {
    throw contradiction('names another run or effect', {
      storedRunId: record.runId,
      storedEffectId: record.effectId,
    })
  }
  if (record.idempotencyKey !== idempotencyKeyOf(runId, effectId)) {
    throw contradiction('carries an idempotency key not derived from its ids')
  }
  if (record.state === 'confirmed' && record.error !== null) {
    throw contradiction('is both confirmed and failed')
  }
  if (record.state === 'failed' && (record.error === null || record.result !== null)) {
    throw contradiction('is failed without an error, or both failed and confirmed')
  }
  if (
    record.state !== 'confirmed' &&
    record.state !== 'failed' &&
    (record.result !== null || record.error !== null)
  ) {
    throw contradiction(`is ${record.state} yet holds an outcome`)
  }
  if (record.token > newestToken) {
    throw contradiction('was written by an attempt newer than the run\u2019s newest attempt', {
      token: record.token,
      newestToken,
    })
  }
}

/** Reads and verifies one effect record, or `null` when none is stored. */
export async function loadEffect(
  backend: Backend,
  runId: string,
  effectId: string,
  newestToken: number,
): Promise<LoadedEffect | null> {
  const key = runEffectKey(runId, effectId)
  const found = await backend.get(key)
  if (found === null) return null
  const record = decodeRunRecord(found.value, 'effect', effectRecordSchema, key)
  checkConsistent(record, runId, effectId, newestToken)
  return { record, version: found.meta.version }
}

/** The owner-side context every ledger write needs. */
export interface LedgerContext {
  readonly backend: Backend
  readonly runId: string
  readonly ownership: RunOwnership
  readonly attemptId: string
  readonly token: number
  readonly clock: Clock
}

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
 * effect, else over the version read. A final record's lease is no longer
 * renewed and its incomplete-marker is removed.
 */
export async function storeEffect(
  ctx: LedgerContext,
  record: EffectRecord,
  version: string | null,
): Promise<LoadedEffect> {
  const key = runEffectKey(ctx.runId, record.effectId)
  const lease = await ctx.ownership.leaseFor(key)
  const meta = await ctx.backend.put(key, encodeRunRecord('effect', effectRecordSchema, record), {
    ...(version === null ? { ifNoneMatch: '*' as const } : { ifMatch: version }),
    lease,
    writer: { writerId: lease.holder },
  })
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
    loaded.version,
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
        submitted.version,
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
      submitted.version,
    )
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_LOST')) throw error
    // The target confirmed but the ledger may not say so: recovery reconciles it.
    throw unknownError(submitted.record, 'confirm_not_recorded', error)
  }
  return result
}

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
