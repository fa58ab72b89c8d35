export { AUDIT_EVENTS, type AuditEntry, auditEntrySchema, MAX_AUDIT_ENTRIES } from './worker/audit.js'
export { canonicalJson, checksumOf, type JsonValue, jsonValueSchema } from './shared/canonical-json.js'
export {
  type ConflictListener,
  type ConflictPolicy,
  type ConflictWarning,
  processWarningListener,
} from './session/conflict-policy.js'
export {
  Daemon,
  type DaemonFields,
  type ResumeDaemonOptions,
  resumeDaemon,
  type SpawnDaemonOptions,
  spawnDaemon,
} from './daemon/daemon.js'
// --- Daemon queues (issue 14) ---
export {
  assertDaemonId,
  createDaemonQueue,
  DaemonQueue,
  openDaemonQueue,
  type QueueCounts,
} from './daemon/daemon-queue.js'
export {
  DAEMON_STATES,
  type DaemonSnapshot,
  type DaemonSnapshotOptions,
  type DaemonState,
  daemonSnapshot,
  type InflightEvent,
} from './daemon/daemon-snapshot.js'
export {
  DEFAULT_VISIBILITY_TIMEOUT_MS,
  Delivery,
  type DeliveryOptions,
  deliveryOptionsSchema,
} from './daemon/delivery.js'
// --- Runs and the effect ledger (seed 002) ---
export {
  type EffectCall,
  type EffectHandler,
  effectRejected,
  idempotencyKeyOf,
  type ReconcileAnswer,
} from './run/effect.js'
export {
  DAEMON_ERROR_CODES,
  type DaemonErrorCode,
  RUNTIME_ERROR_CODES,
  type RuntimeErrorCode,
} from './shared/errors.js'
export {
  HANDOFF_KEY,
  HANDOFF_VERSION,
  type HandoffArtifact,
  type HandoffEnvelope,
  handoffArtifactSchema,
  handoffEnvelopeSchema,
} from './session/handoff.js'
export type {
  HookDecision,
  LifecycleHookEvent,
  LifecycleHooks,
  PostHook,
  PreHook,
} from './worker/hooks.js'
export { assertSessionId, assertWorkerId, ID_PATTERN, isValidId, uuidv7 } from './shared/ids.js'
export {
  DAEMONS_PREFIX,
  daemonConfigKey,
  daemonEventKey,
  daemonHeadKey,
  daemonTailKey,
  handoffKey,
  QUARANTINE_PREFIX,
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
  workerSuspendRequestKey,
} from './shared/layout.js'
export {
  listQuarantined,
  type QuarantineEntry,
  type QuarantineOptions,
  type QuarantineReport,
  quarantineRecord,
  quarantineReportSchema,
  quarantineWorkerSnapshot,
} from './worker/quarantine.js'
export {
  type DaemonQueueOptions,
  DEFAULT_MAX_EVENT_BYTES,
  DEFAULT_QUEUE_CAPACITY,
  daemonQueueOptionsSchema,
  type EventRecord,
  eventRecordSchema,
  MAX_EVENT_BYTES_LIMIT,
  MAX_QUEUE_CAPACITY,
  type QueueConfig,
} from './daemon/queue-records.js'
export { RECOVERY_OUTCOMES, type RecoveryDecision } from './run/reconcile.js'
// --- seeds 000/004 conformance (runtime-seeds) ---
export {
  type CloudSession,
  defaultResumeBy,
  dispatchResumeBy,
  firstHandled,
  RESUME_BY_MECHANISMS,
  type ResumeBy,
  type ResumeByDecision,
  type ResumeByDecline,
  type ResumeByDispatch,
  type ResumeByHarness,
  ResumeByPresets,
  type ResumeRegistration,
  type TriggerDispatcher,
} from './worker/resume-by.js'
export {
  parseResumeConditions,
  type ResumeConditions,
  type ResumeConditionsInput,
  resumeConditionsSchema,
  TIMEOUT_ACTIONS,
} from './worker/resume-conditions.js'
export { type ResumeWorkerOptions, resumeWorker } from './worker/resume-worker.js'
export { type CommitStepOptions, type EffectHandlers, Run } from './run/run.js'
export { DEFAULT_RUN_LEASE_TTL_MS, type RunOwnerOptions } from './run/run-attempt.js'
export {
  RUN_RECORD_FORMAT,
  RUN_RECORD_KINDS,
  RUN_RECORD_SCHEMA_VERSION,
  type RunRecordKind,
} from './run/run-codec.js'
export {
  type OpenRunOptions,
  openRun,
  type RevalidationCheck,
  type RevalidationContext,
  resumeRun,
} from './run/run-open.js'
export {
  type EffectResolution,
  inspectRun,
  type RunView,
  readEffect,
  resolveEffect,
} from './run/run-operator.js'
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
} from './run/run-records.js'
export { openSession, resumeSession, type Session, type SessionOptions } from './session/session.js'
export {
  handoffKeyName,
  redactLocation,
  type StateHandle,
  stateHandleSchema,
} from './session/session-handle.js'
export { type ListSessionsOptions, listSessions, type SessionPage } from './session/session-list.js'
export { inspectSession, type PolicyOverride, type SessionInfo } from './session/session-marker.js'
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
} from './worker/snapshot-codec.js'
export {
  type PendingSuspend,
  type SuspendOutcome,
  type SuspendWorkerOptions,
  suspendWorker,
} from './worker/suspend-request.js'
export {
  type ConditionFlags,
  conditionFlagsSchema,
  SUSPEND_INITIATORS,
  type SuspendInitiator,
  type SuspendRequest,
  type Suspension,
  suspensionSchema,
} from './worker/suspension.js'
export { type WaitForIdleOptions, waitForIdle, waitForIdleOptionsSchema } from './daemon/wait-idle.js'
export { Worker, type WorkerUpdate } from './worker/worker.js'
export {
  createWorkerEvents,
  type WorkerCompletedEvent,
  type WorkerEvent,
  type WorkerEventListener,
  type WorkerEvents,
  type WorkerSuspendedEvent,
} from './worker/worker-events.js'
export {
  closeWorker,
  inspectWorker,
  type StartWorkerOptions,
  startWorker,
} from './worker/worker-lifecycle.js'
export { DEFAULT_WORKER_LEASE_TTL_MS, type WorkerOwnerOptions } from './worker/worker-ownership.js'
