import { type Backend, isAgentStateError } from '@agent-state/core'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { runOpenMarkerKey, runOpenPrefix } from '../shared/layout.js'
import type { EffectHandler, ReconcileAnswer } from './effect.js'
import {
  effectCall,
  isFinal,
  type LedgerContext,
  type LoadedEffect,
  loadEffect,
  storeEffect,
  transition,
} from './effect-ledger.js'
import type { EffectState } from './run-records.js'

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
 * Applies the recovery rules to one effect (seed 002): planned → safe to
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
      loaded.version,
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
      : await storeEffect(ctx, transition(ctx, loaded.record, 'unknown', rule), loaded.version)
  return { decision: decide(stored, 'needs_attention', rule, found).decision, loaded: stored }
}

/**
 * The run's effects that may be incomplete, found by listing their markers:
 * keys only, one page at a time, so the cost follows the number of
 * incomplete effects, not the run's size. Each is then read and verified.
 *
 * @throws `RUN_RECORD_MISSING` for a marker whose effect record is gone.
 */
export async function listIncomplete(
  backend: Backend,
  runId: string,
  newestToken: number,
): Promise<LoadedEffect[]> {
  const prefix = runOpenPrefix(runId)
  const found: LoadedEffect[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list({ prefix, ...(cursor === undefined ? {} : { cursor }) })
    for (const entry of page.entries) {
      const effectId = entry.key.slice(prefix.length)
      const loaded = await loadEffect(backend, runId, effectId, newestToken)
      if (loaded === null) {
        throw runtimeError(
          'RUN_RECORD_MISSING',
          `Effect ${effectId} of run ${runId} is marked incomplete but its record is missing`,
          { runId, effectId, key: entry.key },
        )
      }
      found.push(loaded)
    }
    cursor = page.cursor
  } while (cursor !== undefined)
  return found
}

/** Removes the marker of an effect found final (a crash hit between its outcome and the marker's removal). */
export async function dropStaleMarker(backend: Backend, runId: string, effectId: string) {
  try {
    await backend.delete(runOpenMarkerKey(runId, effectId))
  } catch (error) {
    if (!isAgentStateError(error)) throw error
    // Left for the next resume: a stale marker only costs one read.
  }
}
