import { AgentStateError, quoteForMessage } from '@agent-state/core'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { runtimeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import type { EffectHandler } from './effect.js'
import { performEffect } from './effect-state-machine.js'
import { auditEntry, type OpenedAttempt, storeHead, withAudit } from './run-attempt.js'
import {
  type Attempt,
  type ContextRef,
  contextRefSchema,
  type RunAuditEntry,
  type StepRecord,
} from './run-records.js'
import { readStep, type StepsState, storeStep } from './run-steps.js'

/** Effect handlers by kind. */
export type EffectHandlers = Readonly<Record<string, EffectHandler>>

/** Options of {@link Run.commitStep}. */
export interface CommitStepOptions {
  /** The position after this step: the next step's name; `null` (default) at the end. */
  readonly next?: string | null
  /** What the next step needs (session keys, artifacts); resume fails when one is missing. */
  readonly contextRefs?: readonly ContextRef[]
}

/**
 * An open run, owned by this process through its lease until `close()` or
 * `complete()`. Every write it makes is fenced: once another process takes
 * the run over, each of them fails with `LEASE_LOST` and records nothing.
 */
export class Run {
  readonly #attempt: OpenedAttempt
  readonly #handlers: EffectHandlers
  #steps: StepsState
  #closed = false

  /** @internal Use `openRun` / `resumeRun`. */
  constructor(attempt: OpenedAttempt, handlers: EffectHandlers, steps: StepsState) {
    this.#attempt = attempt
    this.#handlers = handlers
    this.#steps = steps
  }

  /** The run's id. */
  get runId(): string {
    return this.#attempt.ctx.runId
  }

  /** The attempt this process runs (id, fencing token, holder). */
  get attempt(): Attempt {
    return this.#attempt.head.attempt
  }

  /** How many times the run was opened, this attempt included. */
  get attemptCount(): number {
    return this.#attempt.head.attemptCount
  }

  /** `open`, or `completed` once `complete()` was recorded. */
  get status(): 'open' | 'completed' {
    return this.#attempt.head.status
  }

  /** The newest committed step (its outputs, the next position and context refs), or `null`. */
  get lastStep(): StepRecord | null {
    return this.#steps.last
  }

  /** The run's workflow position: the step to run next (`null` before the first commit or at the end). */
  get position(): { readonly seq: number; readonly step: string | null } {
    return { seq: this.#steps.count, step: this.#steps.last?.next ?? null }
  }

  /** The audit trail on the head as of this process's last write. */
  get audit(): readonly RunAuditEntry[] {
    return this.#attempt.head.audit
  }

  #assertUsable(operation: string): void {
    if (this.#closed)
      throw new AgentStateError('CLOSED', `Run ${this.runId} is closed in this process`)
    if (this.status === 'completed') {
      throw runtimeError('RUN_COMPLETED', `Cannot ${operation}: run ${this.runId} is completed`, {
        runId: this.runId,
      })
    }
  }

  /**
   * Performs effect `effectId` of `kind` at most once to completion: a new
   * effect is recorded `planned`, then `submitted` before its handler's
   * dispatch runs, then `confirmed` (its result is returned) or `failed`.
   * Called again, a confirmed effect returns its stored result without
   * dispatching; a failed one throws `EFFECT_FAILED`; an unknown one is
   * reconciled first.
   *
   * @throws `EFFECT_FAILED`, `EFFECT_UNKNOWN`, `RUN_NEEDS_ATTENTION`, `EFFECT_CONFLICT`
   *   (same id, other kind or request), `EFFECT_KIND_UNKNOWN`, `INVALID_EFFECT_ID`, `LEASE_LOST`.
   */
  async effect(kind: string, effectId: string, request: JsonValue = null): Promise<JsonValue> {
    this.#assertUsable('perform an effect')
    if (!isValidId(effectId)) {
      throw runtimeError('INVALID_EFFECT_ID', 'Invalid effect id: use 1-128 of [A-Za-z0-9_.-]', {
        runId: this.runId,
      })
    }
    const handler = this.#handlers[kind]
    if (handler === undefined || !Object.hasOwn(this.#handlers, kind)) {
      throw runtimeError(
        'EFFECT_KIND_UNKNOWN',
        `No handler is registered for effect kind ${quoteForMessage(kind)}`,
        {
          runId: this.runId,
          kind,
        },
      )
    }
    const parsed = jsonValueSchema.safeParse(request)
    if (!parsed.success)
      throw new AgentStateError('INVALID_ARGUMENT', 'An effect request must be plain JSON')
    return performEffect(this.#attempt.ctx, handler, kind, effectId, parsed.data)
  }

  /**
   * Commits a step: its accepted outputs, the new position and the context
   * references the next step needs, in one create-only, fenced write.
   */
  async commitStep(
    step: string,
    outputs: JsonValue,
    options: CommitStepOptions = {},
  ): Promise<StepRecord> {
    this.#assertUsable('commit a step')
    const parsed = jsonValueSchema.safeParse(outputs)
    if (!parsed.success)
      throw new AgentStateError('INVALID_ARGUMENT', 'Step outputs must be plain JSON')
    const refs = (options.contextRefs ?? []).map((ref) => {
      const checked = contextRefSchema.safeParse(ref)
      if (!checked.success)
        throw new AgentStateError('INVALID_ARGUMENT', 'Invalid context reference')
      return checked.data
    })
    const { ctx } = this.#attempt
    const record: StepRecord = {
      runId: ctx.runId,
      seq: this.#steps.count + 1,
      step,
      outputs: parsed.data,
      next: options.next ?? null,
      contextRefs: refs,
      token: ctx.token,
      attemptId: ctx.attemptId,
      committedAt: new Date(ctx.clock()).toISOString(),
    }
    await storeStep(ctx, record)
    this.#steps = { count: record.seq, last: record }
    return record
  }

  /** A committed step's record (outputs included), or `null` past the newest. */
  async readStep(seq: number): Promise<StepRecord | null> {
    const { ctx } = this.#attempt
    return readStep(ctx.backend, ctx.runId, seq, ctx.token)
  }

  /** Renews the run's leases; call it more often than `leaseTtlMs` during long work. */
  async heartbeat(): Promise<void> {
    if (this.#closed)
      throw new AgentStateError('CLOSED', `Run ${this.runId} is closed in this process`)
    await this.#attempt.ctx.ownership.heartbeat()
  }

  /** Marks the run completed (audited), then releases it. */
  async complete(detail: Record<string, JsonValue> = {}): Promise<void> {
    this.#assertUsable('complete the run')
    const { ctx } = this.#attempt
    const now = new Date(ctx.clock()).toISOString()
    const head = withAudit(
      { ...this.#attempt.head, status: 'completed' },
      [auditEntry(ctx, 'run_completed', detail)],
      now,
    )
    await storeHead(this.#attempt, head)
    await this.close()
  }

  /** Releases the run's leases so another process can open it at once. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#attempt.ctx.ownership.release()
  }
}
