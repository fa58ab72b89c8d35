export {
  type EffectCall,
  type EffectHandler,
  effectRejected,
  idempotencyKeyOf,
  type ReconcileAnswer,
} from './effect.js'
export { UNSETTLED_STATES, type UnsettledState } from './effect-state-index.js'
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
  inspectRunHead,
  RUN_SUMMARY_EFFECTS,
  RUN_SUMMARY_IN_FLIGHT,
  type RunHeadView,
  type RunSummary,
  type RunView,
  readEffect,
  readEffects,
  resolveEffect,
  summarizeRun,
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
