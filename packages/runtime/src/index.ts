export { AUDIT_EVENTS, type AuditEntry, auditEntrySchema, MAX_AUDIT_ENTRIES } from './audit.js'
export { canonicalJson, checksumOf, type JsonValue, jsonValueSchema } from './canonical-json.js'
export {
  type ConflictListener,
  type ConflictPolicy,
  type ConflictWarning,
  processWarningListener,
} from './conflict-policy.js'
// --- Runs and the effect ledger (seed 002) ---
export {
  type EffectCall,
  type EffectHandler,
  effectRejected,
  idempotencyKeyOf,
  type ReconcileAnswer,
} from './effect.js'
export { RUNTIME_ERROR_CODES, type RuntimeErrorCode } from './errors.js'
export {
  HANDOFF_VERSION,
  type HandoffArtifact,
  type HandoffEnvelope,
  handoffArtifactSchema,
  handoffEnvelopeSchema,
} from './handoff.js'
export type {
  HookDecision,
  LifecycleHookEvent,
  LifecycleHooks,
  PostHook,
  PreHook,
} from './hooks.js'
export { assertSessionId, assertWorkerId, ID_PATTERN, isValidId, uuidv7 } from './ids.js'
export {
  handoffKey,
  RUNS_PREFIX,
  runEffectKey,
  runHeadKey,
  runOpenMarkerKey,
  runOpenPrefix,
  runStepKey,
  runStepsPrefix,
  SESSIONS_PREFIX,
  sessionDataPrefix,
  sessionMarkerKey,
  WORKERS_PREFIX,
  workerSnapshotKey,
} from './layout.js'
export { RECOVERY_OUTCOMES, type RecoveryDecision } from './reconcile.js'
export {
  parseResumeConditions,
  type ResumeConditions,
  type ResumeConditionsInput,
  resumeConditionsSchema,
  TIMEOUT_ACTIONS,
} from './resume-conditions.js'
export { type CommitStepOptions, type EffectHandlers, Run } from './run.js'
export { DEFAULT_RUN_LEASE_TTL_MS, type RunOwnerOptions } from './run-attempt.js'
export {
  RUN_RECORD_FORMAT,
  RUN_RECORD_KINDS,
  RUN_RECORD_SCHEMA_VERSION,
  type RunRecordKind,
} from './run-codec.js'
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
export { openSession, resumeSession, type Session, type SessionOptions } from './session.js'
export { type ListSessionsOptions, listSessions, type SessionPage } from './session-list.js'
export {
  decodeSnapshot,
  encodeSnapshot,
  type ResumeReminder,
  resumeReminderSchema,
  SNAPSHOT_FORMAT,
  SNAPSHOT_SCHEMA_VERSION,
  type SnapshotBody,
  snapshotBodySchema,
  WORKER_STATUSES,
  type WorkerStatus,
} from './snapshot-codec.js'
export {
  SUSPEND_INITIATORS,
  type SuspendInitiator,
  type SuspendRequest,
  type Suspension,
  suspensionSchema,
} from './suspension.js'
export { Worker, type WorkerUpdate } from './worker.js'
export {
  closeWorker,
  DEFAULT_WORKER_LEASE_TTL_MS,
  inspectWorker,
  type ResumeWorkerOptions,
  resumeWorker,
  type StartWorkerOptions,
  startWorker,
  type WorkerOwnerOptions,
} from './worker-lifecycle.js'
