import { type Backend, type Clock, isAgentStateError, systemClock } from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { registerWorkerWakes } from '../wake/worker-wakes.js'
import type { ResumeConditions } from './resume-conditions.js'
import type { Suspension } from './suspension.js'

/**
 * What a resume owner answers (`{ handled, mechanism, reason? }`, docs/runtime/workers.md).
 * A handled decision names the mechanism that now owns the resume; a
 * decline says why.
 */
export interface ResumeByDecision {
  readonly handled: boolean
  /** For example `"ResumeBy.local_runtime"`; required when handled. */
  readonly mechanism?: string
  /** Why it declined (`no_conditions`, `no_cloud_session`...). */
  readonly reason?: string
  /** The trigger id the owner registered, recorded as the Suspension's `autoResumeTrigger`. */
  readonly triggerId?: string
  /** Earlier entries of a {@link firstHandled} composition that declined. */
  readonly declined?: readonly ResumeByDecline[]
}

/** One declined entry, as recorded in the `resume_by_declined` audit. */
export interface ResumeByDecline {
  readonly mechanism: string
  readonly reason: string
}

/** What a trigger dispatcher or cloud receiver is asked to register. */
export interface ResumeRegistration {
  readonly workerId: string
  /** The full conditions, payloads included (they never reach the Suspension). */
  readonly conditions: ResumeConditions
  /** The Suspension being parked (flags only). */
  readonly suspension: Suspension
}

/** The in-process trigger dispatcher `ResumeBy.localRuntime` registers with. */
export interface TriggerDispatcher {
  /** Registers the wake-up and returns its trigger id; a throw is `TRIGGER_REGISTRATION_FAILED`. */
  register(registration: ResumeRegistration): string | Promise<string>
}

/** A bound cloud session `ResumeBy.cloudHarness` registers with (durable across restarts). */
export interface CloudSession {
  /** Registers the suspension with the cloud webhook receiver; returns its trigger id. */
  register(registration: ResumeRegistration): string | Promise<string>
}

/** What a resume owner sees besides the Suspension (docs/runtime/workers.md). */
export interface ResumeByHarness {
  readonly workerId: string
  /** The conditions with their payloads, or `null` when parked open. */
  readonly conditions: ResumeConditions | null
  /** A trigger dispatcher of the caller's; without one, `localRuntime` registers durable wakes on `backend`. */
  readonly triggers?: TriggerDispatcher
  readonly cloudSession?: CloudSession
  /** The worker's backend: where `localRuntime` registers its wakes (docs/runtime/wakes.md). */
  readonly backend?: Backend
  /** The clock a timeout is counted from. */
  readonly clock?: Clock
}

/**
 * The runtime's own trigger dispatcher: registers the conditions as durable
 * wakes on `backend` (a `timeout` wake, an `onEvent` topic waiter) that any
 * wake dispatcher over the backend fires; the trigger id is the Suspension's
 * `autoResumeTrigger` (docs/runtime/wakes.md, Resume conditions).
 */
export function wakeTriggers(backend: Backend, clock: Clock): TriggerDispatcher {
  return {
    register: ({ workerId, conditions }) =>
      registerWorkerWakes(backend, workerId, conditions, clock),
  }
}

/** A resume owner: `(harness, suspension) => { handled, mechanism, reason? }` (docs/runtime/workers.md). */
export type ResumeBy = (
  harness: ResumeByHarness,
  suspension: Suspension,
) => ResumeByDecision | Promise<ResumeByDecision>

/** The mechanism names the presets record. */
export const RESUME_BY_MECHANISMS = {
  parentLlm: 'ResumeBy.parent_llm',
  localRuntime: 'ResumeBy.local_runtime',
  cloudHarness: 'ResumeBy.cloud_harness',
  pipelineDrain: 'ResumeBy.pipeline_drain',
} as const

async function register(
  via: TriggerDispatcher | CloudSession,
  harness: ResumeByHarness,
  conditions: ResumeConditions,
  suspension: Suspension,
  mechanism: string,
): Promise<string> {
  let id: unknown
  try {
    id = await via.register({ workerId: harness.workerId, conditions, suspension })
  } catch (cause) {
    throw runtimeError(
      'TRIGGER_REGISTRATION_FAILED',
      `${mechanism} could not register the resume conditions of worker ${harness.workerId}`,
      { workerId: harness.workerId, mechanism },
      cause,
    )
  }
  if (typeof id !== 'string' || id === '' || id.length > 256) {
    throw runtimeError(
      'TRIGGER_REGISTRATION_FAILED',
      `${mechanism} returned no trigger id for worker ${harness.workerId}`,
      { workerId: harness.workerId, mechanism },
    )
  }
  return id
}

/** The four resume-owner presets (docs/runtime/workers.md). */
export const ResumeByPresets: {
  /** Always handled: the parent agent's LLM owns the resume. */
  readonly parentLlm: ResumeBy
  /**
   * Registers the conditions with `harness.triggers`, or else as durable wakes
   * on `harness.backend` ({@link wakeTriggers}); declines `no_conditions` (or
   * `no_trigger_dispatcher` when it has neither).
   */
  readonly localRuntime: ResumeBy
  /** Registers with `harness.cloudSession`; declines `no_cloud_session` when none is bound. */
  readonly cloudHarness: ResumeBy
  /** Always handled: the enclosing pipeline's drain step owns the resume. */
  readonly pipelineDrain: ResumeBy
} = {
  parentLlm: () => ({ handled: true, mechanism: RESUME_BY_MECHANISMS.parentLlm }),
  localRuntime: async (harness, suspension) => {
    const mechanism = RESUME_BY_MECHANISMS.localRuntime
    if (harness.conditions === null) return { handled: false, mechanism, reason: 'no_conditions' }
    const triggers =
      harness.triggers ??
      (harness.backend === undefined
        ? undefined
        : wakeTriggers(harness.backend, harness.clock ?? systemClock))
    if (triggers === undefined) {
      return { handled: false, mechanism, reason: 'no_trigger_dispatcher' }
    }
    const triggerId = await register(triggers, harness, harness.conditions, suspension, mechanism)
    return { handled: true, mechanism, triggerId }
  },
  cloudHarness: async (harness, suspension) => {
    const mechanism = RESUME_BY_MECHANISMS.cloudHarness
    if (harness.cloudSession === undefined) {
      return { handled: false, mechanism, reason: 'no_cloud_session' }
    }
    if (harness.conditions === null) return { handled: false, mechanism, reason: 'no_conditions' }
    const triggerId = await register(
      harness.cloudSession,
      harness,
      harness.conditions,
      suspension,
      mechanism,
    )
    return { handled: true, mechanism, triggerId }
  },
  pipelineDrain: () => ({ handled: true, mechanism: RESUME_BY_MECHANISMS.pipelineDrain }),
}

function isRegistrationFailure(error: unknown): boolean {
  return isAgentStateError(error, 'TRIGGER_REGISTRATION_FAILED')
}

function failureReason(error: unknown): string {
  return `threw ${isAgentStateError(error) ? error.code : 'an error'}`
}

/**
 * Composes resume owners (docs/runtime/workers.md): the first that
 * handles wins; the declines before it are kept for the audit. An entry that
 * throws counts as a decline, except a `TRIGGER_REGISTRATION_FAILED`, which
 * fails the suspend as HARN-SUS-007 (docs/runtime/errors.md).
 */
export function firstHandled(...owners: readonly ResumeBy[]): ResumeBy {
  return async (harness, suspension) => {
    const declined: ResumeByDecline[] = []
    for (const owner of owners) {
      let decision: ResumeByDecision
      try {
        decision = await owner(harness, suspension)
      } catch (error) {
        if (isRegistrationFailure(error)) throw error
        declined.push({ mechanism: 'unknown', reason: failureReason(error) })
        continue
      }
      declined.push(...(decision.declined ?? []))
      if (decision.handled === true) return { ...decision, declined }
      declined.push({
        mechanism: decision.mechanism ?? 'unknown',
        reason: decision.reason ?? 'declined',
      })
    }
    return { handled: false, mechanism: 'first_handled', reason: 'none_handled', declined }
  }
}

/**
 * The default resume owner (docs/runtime/workers.md): no conditions → the parent LLM; conditions
 * and no cloud session → the local runtime; conditions and a cloud session →
 * `firstHandled(cloudHarness, localRuntime)`.
 */
export const defaultResumeBy: ResumeBy = (harness, suspension) => {
  if (harness.conditions === null) return ResumeByPresets.parentLlm(harness, suspension)
  if (harness.cloudSession === undefined) return ResumeByPresets.localRuntime(harness, suspension)
  return firstHandled(ResumeByPresets.cloudHarness, ResumeByPresets.localRuntime)(
    harness,
    suspension,
  )
}

/** The outcome of a dispatch: the owner recorded in the Suspension and the audits to store. */
export interface ResumeByDispatch {
  readonly mechanism: string
  readonly triggerId: string | null
  readonly audits: ReadonlyArray<{
    readonly event: 'resume_by_dispatched' | 'resume_by_declined'
    readonly detail: Record<string, JsonValue>
  }>
}

/**
 * Runs the resume owner and resolves who owns the resume. A decline or a
 * throw falls back to `ResumeBy.parentLlm`, so the parent is always the
 * safety net; every decline becomes a `resume_by_declined` audit and the
 * resolved owner one `resume_by_dispatched`.
 *
 * @throws `TRIGGER_REGISTRATION_FAILED` (HARN-SUS-007).
 */
export async function dispatchResumeBy(
  owner: ResumeBy,
  harness: ResumeByHarness,
  suspension: Suspension,
): Promise<ResumeByDispatch> {
  const declined: ResumeByDecline[] = []
  let decision: ResumeByDecision | undefined
  try {
    decision = await owner(harness, suspension)
  } catch (error) {
    if (isRegistrationFailure(error)) throw error
    declined.push({ mechanism: 'unknown', reason: failureReason(error) })
  }
  let handled: ResumeByDecision | undefined
  if (decision !== undefined) {
    declined.push(...(Array.isArray(decision.declined) ? decision.declined : []))
    const valid =
      decision.handled === true &&
      typeof decision.mechanism === 'string' &&
      decision.mechanism !== ''
    if (valid) handled = decision
    else {
      declined.push({
        mechanism: typeof decision.mechanism === 'string' ? decision.mechanism : 'unknown',
        reason:
          decision.handled === true
            ? 'handled_without_mechanism'
            : typeof decision.reason === 'string'
              ? decision.reason
              : 'declined',
      })
    }
  }
  const fallback = handled === undefined
  const mechanism = handled?.mechanism ?? RESUME_BY_MECHANISMS.parentLlm
  const triggerId = typeof handled?.triggerId === 'string' ? handled.triggerId : null
  return {
    mechanism,
    triggerId,
    audits: [
      ...declined.map((d) => ({
        event: 'resume_by_declined' as const,
        detail: { mechanism: d.mechanism, reason: d.reason },
      })),
      { event: 'resume_by_dispatched' as const, detail: { mechanism, fallback, triggerId } },
    ],
  }
}
