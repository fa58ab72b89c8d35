import type { Backend } from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { sessionDataPrefix } from '../shared/layout.js'
import { dropStaleMarker, listIncomplete } from './effect-ledger.js'
import {
  needsAttention,
  type Recovered,
  type RecoveryDecision,
  recoverEffect,
  redispatchEffect,
} from './effect-state-machine.js'
import { type EffectHandlers, Run } from './run.js'
import {
  auditEntry,
  beginAttempt,
  type OpenedAttempt,
  type RunOwnerOptions,
  storeHead,
  withAudit,
} from './run-attempt.js'
import type { Attempt, ContextRef, RunAuditEntry, StepRecord } from './run-records.js'
import { loadSteps } from './run-steps.js'

/** What a revalidation check sees. */
export interface RevalidationContext {
  readonly runId: string
  /** The attempt being opened. */
  readonly attempt: Attempt
  /** Whether the run was created by this open (no earlier attempt). */
  readonly created: boolean
  /** The newest committed step (where earlier approvals and budgets are recorded), or `null`. */
  readonly lastStep: StepRecord | null
}

/**
 * A condition that must still hold when the run is opened (approval not
 * expired or bound to this payload, budget left, credentials valid). Return
 * `true` to pass, or a log-safe reason why it fails.
 */
export interface RevalidationCheck {
  readonly name: string
  check(context: RevalidationContext): Promise<true | string> | true | string
}

/** Options of {@link openRun}. */
export interface OpenRunOptions extends RunOwnerOptions {
  /** Effect handlers by kind; incomplete effects of a kind without one need attention. */
  readonly handlers: EffectHandlers
  /** Checks run at every open, after reconciliation queries and before any dispatch. */
  readonly revalidate?: readonly RevalidationCheck[]
}

function refKey(ref: ContextRef): string {
  return ref.kind === 'artifact' ? ref.key : `${sessionDataPrefix(ref.sessionId)}${ref.key}`
}

function decisionDetail(decision: RecoveryDecision, extra: Record<string, JsonValue> = {}) {
  return { ...decision, ...extra }
}

async function stop(
  attempt: OpenedAttempt,
  entries: RunAuditEntry[],
  error: Error,
): Promise<never> {
  const now = new Date(attempt.ctx.clock()).toISOString()
  await storeHead(attempt, withAudit(attempt.head, entries, now))
  throw error
}

/**
 * Recovery before anything continues (docs/runtime/runs-and-effects.md): verify the records, reconcile
 * incomplete effects, check the context references, revalidate, then
 * re-dispatch what is absent and retry-safe. Each decision is audited.
 */
async function recover(attempt: OpenedAttempt, options: OpenRunOptions): Promise<Run> {
  const { ctx } = attempt
  const steps = await loadSteps(ctx.backend, ctx.runId, ctx.token)
  const audit: RunAuditEntry[] = []
  const attention: { effectId: string; kind: string; state: string; rule: string }[] = []
  const redispatch: Recovered[] = []
  for (const loaded of await listIncomplete(ctx.backend, ctx.runId, ctx.token)) {
    const handler = Object.hasOwn(options.handlers, loaded.record.kind)
      ? options.handlers[loaded.record.kind]
      : undefined
    const recovered = await recoverEffect(ctx, loaded, handler)
    const { decision } = recovered
    if (decision.outcome === 'final') {
      await dropStaleMarker(ctx.backend, ctx.runId, decision.effectId)
      continue
    }
    audit.push(auditEntry(ctx, 'effect_reconciled', decisionDetail(decision)))
    if (decision.outcome === 'redispatch') redispatch.push(recovered)
    if (decision.outcome === 'needs_attention') {
      attention.push({ ...decision, state: recovered.loaded.record.state })
    }
  }
  const refs = steps.last?.contextRefs ?? []
  for (const ref of refs) {
    if ((await ctx.backend.head(refKey(ref))) === null) {
      audit.push(auditEntry(ctx, 'context_checked', { missing: { ...ref } }))
      await stop(
        attempt,
        audit,
        runtimeError('RUN_CONTEXT_MISSING', `Run ${ctx.runId} refers to context that is missing`, {
          runId: ctx.runId,
          ref: { ...ref },
        }),
      )
    }
  }
  if (refs.length > 0) audit.push(auditEntry(ctx, 'context_checked', { refs: refs.length }))
  const revalidationContext: RevalidationContext = {
    runId: ctx.runId,
    attempt: attempt.head.attempt,
    created: attempt.created,
    lastStep: steps.last,
  }
  for (const check of options.revalidate ?? []) {
    let verdict: true | string
    try {
      verdict = await check.check(revalidationContext)
    } catch (error) {
      verdict = `the check threw: ${error instanceof Error ? error.message : String(error)}`
    }
    if (verdict !== true) {
      audit.push(auditEntry(ctx, 'revalidation_failed', { check: check.name, reason: verdict }))
      await stop(
        attempt,
        audit,
        runtimeError(
          'RUN_REVALIDATION_FAILED',
          `Run ${ctx.runId} failed revalidation ${check.name}: ${verdict}`,
          {
            runId: ctx.runId,
            check: check.name,
            reason: verdict,
          },
        ),
      )
    }
    audit.push(auditEntry(ctx, 'revalidation_passed', { check: check.name }))
  }
  for (const { loaded, decision } of redispatch) {
    const handler = options.handlers[loaded.record.kind]
    if (handler === undefined) continue
    const outcome = await redispatchEffect(ctx, loaded, handler, decision.rule)
    audit.push(
      auditEntry(ctx, 'effect_redispatched', decisionDetail(decision, { result: outcome })),
    )
    if (outcome === 'unknown')
      attention.push({ ...decision, state: 'unknown', rule: `${decision.rule}>unknown` })
  }
  if (attention.length > 0) {
    audit.push(auditEntry(ctx, 'needs_attention', { effects: attention.map((e) => ({ ...e })) }))
    await stop(attempt, audit, needsAttention(ctx.runId, attention))
  }
  if (audit.length > 0) {
    await storeHead(attempt, withAudit(attempt.head, audit, new Date(ctx.clock()).toISOString()))
  }
  return new Run(attempt, options.handlers, steps)
}

/**
 * Opens run `runId`, creating it when it does not exist, or resumes it: takes
 * its lease, starts a new attempt, reconciles incomplete effects, checks
 * context references and revalidates before it returns. On any failure the
 * lease is released and nothing is dispatched past the failing check.
 *
 * @throws `RUN_OWNED` (with `context.holder` and `context.expiresAt`),
 *   `RUN_NEEDS_ATTENTION` (with `context.effects`), `RUN_REVALIDATION_FAILED`,
 *   `RUN_CONTEXT_MISSING`, `RUN_RECORD_MISSING` / `_CORRUPT` / `_INCOMPATIBLE` / `_CONTRADICTORY`.
 */
export async function openRun(
  backend: Backend,
  runId: string,
  options: OpenRunOptions,
): Promise<Run> {
  return open(backend, runId, options, true)
}

/** As {@link openRun}, but `RUN_NOT_FOUND` when the run does not exist. */
export async function resumeRun(
  backend: Backend,
  runId: string,
  options: OpenRunOptions,
): Promise<Run> {
  return open(backend, runId, options, false)
}

async function open(backend: Backend, runId: string, options: OpenRunOptions, create: boolean) {
  const attempt = await beginAttempt(backend, runId, options, create)
  try {
    return await recover(attempt, options)
  } catch (error) {
    await attempt.ctx.ownership.release()
    throw error
  }
}
