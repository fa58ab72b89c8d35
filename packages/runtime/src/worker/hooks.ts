import type { SuspendInitiator } from './suspension.js'

/**
 * What a hook sees: the structured suspend metadata, with presence flags for
 * the conditions and the input instead of their contents (hooks never see
 * transcript text or resume input).
 */
export interface LifecycleHookEvent {
  readonly workerId: string
  readonly phase: 'suspend' | 'resume'
  /** The suspend reason (for resume: the reason the worker was parked with). */
  readonly reason: string
  readonly initiator: SuspendInitiator
  readonly iterationsCompleted: number
  readonly hasTrigger: boolean
  readonly hasTimeout: boolean
  readonly hasOnEvent: boolean
  /** Resume only: whether input was given, and the transcript mode. */
  readonly hasInput?: boolean
  readonly continueTranscript?: boolean
}

/** A pre-hook's answer. Returning nothing allows. */
export type HookDecision =
  | { readonly decision: 'allow' }
  | { readonly decision: 'deny'; readonly reason?: string }

/** A pre-hook: may deny the transition. Throwing aborts it with that error. */
export type PreHook = (
  event: LifecycleHookEvent,
) => HookDecision | undefined | Promise<HookDecision | undefined>
/** A post-hook: advisory, runs after the transition is persisted. */
export type PostHook = (event: LifecycleHookEvent) => void | Promise<void>

/**
 * Hooks around suspend and resume (docs/runtime/workers.md). `preSuspend` / `preResume` can
 * deny (`SUSPEND_DENIED` / `RESUME_DENIED`, recorded in the audit trail).
 * Post-hooks cannot undo anything: an error they throw goes to `onHookError`.
 */
export interface LifecycleHooks {
  readonly preSuspend?: PreHook
  readonly postSuspend?: PostHook
  readonly preResume?: PreHook
  readonly postResume?: PostHook
  /** Receives post-hook errors. Default: `process.emitWarning`. */
  readonly onHookError?: (error: unknown, event: LifecycleHookEvent) => void
}

/** Runs a pre-hook; resolves the denial reason, or `undefined` when allowed. */
export async function runPreHook(
  hook: PreHook | undefined,
  event: LifecycleHookEvent,
): Promise<{ reason: string } | undefined> {
  if (hook === undefined) return undefined
  const decision = await hook(event)
  if (decision?.decision === 'deny') return { reason: decision.reason ?? 'denied by hook' }
  return undefined
}

/** Runs a post-hook, routing its failure to `onHookError`. */
export async function runPostHook(
  hooks: LifecycleHooks,
  hook: PostHook | undefined,
  event: LifecycleHookEvent,
): Promise<void> {
  if (hook === undefined) return
  try {
    await hook(event)
  } catch (error) {
    if (hooks.onHookError !== undefined) hooks.onHookError(error, event)
    else
      process.emitWarning(
        `agent-state: ${event.phase} post-hook of worker ${event.workerId} failed: ${String(error)}`,
        {
          code: 'HOOK_FAILED',
        },
      )
  }
}
