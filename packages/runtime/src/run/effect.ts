import { createHash } from 'node:crypto'
import { AgentStateError, isAgentStateError } from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'

/** What a dispatch or a reconciler is told about the effect. */
export interface EffectCall {
  readonly runId: string
  readonly effectId: string
  /** Derived from the run id and effect id; the same for every dispatch of the effect. */
  readonly idempotencyKey: string
  readonly request: JsonValue
  /** The attempt making the call. */
  readonly attemptId: string
  /** Aborted when the effect's `timeoutMs` passes (the outcome then becomes `unknown`). */
  readonly signal: AbortSignal
}

/** What the target says about an effect, asked by idempotency key. */
export type ReconcileAnswer =
  | { readonly status: 'confirmed'; readonly result: JsonValue }
  | { readonly status: 'absent' }
  | { readonly status: 'unknown'; readonly detail?: string }

/**
 * How one kind of side effect is performed and recovered. Registered per
 * kind when a run is opened, so a fresh process that resumes the run can
 * reconcile effects an earlier process left incomplete.
 */
export interface EffectHandler {
  /**
   * Performs the effect, passing `call.idempotencyKey` to the target. Resolve
   * with the (JSON) result once the target confirmed. Throw
   * {@link effectRejected} only when the target definitely did not and will
   * not apply it; any other failure leaves the effect `unknown`.
   */
  dispatch(call: EffectCall): Promise<JsonValue>
  /** Asks the target by idempotency key whether the effect happened. */
  reconcile(call: EffectCall): Promise<ReconcileAnswer>
  /** Whether dispatching again is safe when the reconciler reports the effect absent. */
  readonly retrySafe: boolean
  /** After this long a dispatch is abandoned and the effect is `unknown`. Default: no limit. */
  readonly timeoutMs?: number
}

/**
 * The idempotency key of an effect: `as1-` plus the SHA-256 of the run id
 * and effect id, so it is stable across attempts and processes, 68
 * characters whatever the ids (providers often cap keys at 255), and never
 * shared by two effects.
 */
export function idempotencyKeyOf(runId: string, effectId: string): string {
  const hash = createHash('sha256').update(`agent-state/effect\0${runId}\0${effectId}`, 'utf8')
  return `as1-${hash.digest('hex')}`
}

/**
 * The error a dispatch throws when the target definitely rejected the
 * effect (a validation error, a declined card): the effect becomes
 * `failed`. `code` is stored with the message; keep both log-safe.
 */
export function effectRejected(message: string, code?: string): AgentStateError {
  return new AgentStateError('EFFECT_FAILED', message, {
    context: { rejected: true, rejectionCode: code ?? null },
  })
}

/** Whether a dispatch error is a definite rejection (see {@link effectRejected}). */
export function isRejection(error: unknown): error is AgentStateError {
  return isAgentStateError(error, 'EFFECT_FAILED') && error.context.rejected === true
}
