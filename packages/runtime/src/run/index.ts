export {
  type EffectCall,
  type EffectHandler,
  effectRejected,
  idempotencyKeyOf,
  type ReconcileAnswer,
} from './effect.js'
export {
  RECOVERY_OUTCOMES,
  type RecoveryDecision,
} from './effect-state-machine.js'
export {
  type CommitStepOptions,
  type EffectHandlers,
  Run,
} from './run.js'
export {
  DEFAULT_RUN_LEASE_TTL_MS,
  type RunOwnerOptions,
} from './run-attempt.js'
export {
  type OpenRunOptions,
  openRun,
  type RevalidationCheck,
  type RevalidationContext,
  resumeRun,
} from './run-open.js'
export {
  type EffectResolution,
  inspectRun,
  type RunView,
  readEffect,
  resolveEffect,
} from './run-operator.js'
export {
  type Attempt,
  type ContextRef,
  EFFECT_STATES,
  type EffectError,
  type EffectRecord,
  type EffectState,
  RUN_AUDIT_EVENTS,
  type RunAuditEntry,
  type RunHead,
  type StepRecord,
} from './run-records.js'
