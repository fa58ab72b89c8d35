export { AUDIT_EVENTS, type AuditEntry, auditEntrySchema, MAX_AUDIT_ENTRIES } from './audit.js'
export { canonicalJson, checksumOf, type JsonValue, jsonValueSchema } from './canonical-json.js'
export {
  type ConflictListener,
  type ConflictPolicy,
  type ConflictWarning,
  processWarningListener,
} from './conflict-policy.js'
export { RUNTIME_ERROR_CODES, type RuntimeErrorCode } from './errors.js'
export {
  HANDOFF_KEY,
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
  QUARANTINE_PREFIX,
  SESSIONS_PREFIX,
  sessionDataPrefix,
  sessionMarkerKey,
  WORKERS_PREFIX,
  workerSnapshotKey,
  workerSuspendRequestKey,
} from './layout.js'
export {
  listQuarantined,
  type QuarantineEntry,
  type QuarantineOptions,
  type QuarantineReport,
  quarantineRecord,
  quarantineReportSchema,
  quarantineWorkerSnapshot,
} from './quarantine.js'
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
} from './resume-by.js'
export {
  parseResumeConditions,
  type ResumeConditions,
  type ResumeConditionsInput,
  resumeConditionsSchema,
  TIMEOUT_ACTIONS,
} from './resume-conditions.js'
export { type ResumeWorkerOptions, resumeWorker } from './resume-worker.js'
export { openSession, resumeSession, type Session, type SessionOptions } from './session.js'
export {
  handoffKeyName,
  redactLocation,
  type StateHandle,
  stateHandleSchema,
} from './session-handle.js'
export { type ListSessionsOptions, listSessions, type SessionPage } from './session-list.js'
export { inspectSession, type PolicyOverride, type SessionInfo } from './session-marker.js'
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
  type PendingSuspend,
  type SuspendOutcome,
  type SuspendWorkerOptions,
  suspendWorker,
} from './suspend-request.js'
export {
  type ConditionFlags,
  conditionFlagsSchema,
  SUSPEND_INITIATORS,
  type SuspendInitiator,
  type SuspendRequest,
  type Suspension,
  suspensionSchema,
} from './suspension.js'
export { Worker, type WorkerUpdate } from './worker.js'
export {
  createWorkerEvents,
  type WorkerCompletedEvent,
  type WorkerEvent,
  type WorkerEventListener,
  type WorkerEvents,
  type WorkerSuspendedEvent,
} from './worker-events.js'
export {
  closeWorker,
  inspectWorker,
  type StartWorkerOptions,
  startWorker,
} from './worker-lifecycle.js'
export { DEFAULT_WORKER_LEASE_TTL_MS, type WorkerOwnerOptions } from './worker-ownership.js'
