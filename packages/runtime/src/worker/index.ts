export type { AuditEntry } from './audit.js'
export type {
  HookDecision,
  LifecycleHookEvent,
  LifecycleHooks,
  PostHook,
  PreHook,
} from './hooks.js'
export {
  listQuarantined,
  type QuarantineEntry,
  type QuarantineOptions,
  type QuarantineReport,
  quarantineRecord,
  quarantineReportSchema,
  quarantineWorkerSnapshot,
} from './quarantine.js'
export {
  type CloudSession,
  defaultResumeBy,
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
  wakeTriggers,
} from './resume-by.js'
export {
  MAX_TIMEOUT_INPUT_BYTES,
  MAX_TIMEOUT_MINUTES,
  parseResumeConditions,
  type ResumeConditions,
  type ResumeConditionsInput,
  resumeConditionsSchema,
  TIMEOUT_ACTIONS,
} from './resume-conditions.js'
export {
  type ResumeWorkerOptions,
  resumeWorker,
} from './resume-worker.js'
export {
  type ResumeReminder,
  type SnapshotBody,
  WORKER_STATUSES,
  type WorkerStatus,
} from './snapshot-codec.js'
export {
  type PendingSuspend,
  type SuspendOutcome,
  type SuspendRequest,
  type SuspendWorkerOptions,
  suspendWorker,
} from './suspend-request.js'
export {
  type ConditionFlags,
  conditionFlagsSchema,
  SUSPEND_INITIATORS,
  type SuspendInitiator,
  type Suspension,
  suspensionSchema,
} from './suspension.js'
export {
  Worker,
  type WorkerUpdate,
} from './worker.js'
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
export {
  DEFAULT_WORKER_LEASE_TTL_MS,
  type WorkerOwnerOptions,
} from './worker-ownership.js'
export type { WorkerRunOptions } from './worker-run.js'
