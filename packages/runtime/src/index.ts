export { AUDIT_EVENTS, type AuditEntry, auditEntrySchema, MAX_AUDIT_ENTRIES } from './audit.js'
export { canonicalJson, checksumOf, type JsonValue, jsonValueSchema } from './canonical-json.js'
export {
  type ConflictListener,
  type ConflictPolicy,
  type ConflictWarning,
  processWarningListener,
} from './conflict-policy.js'
export {
  Daemon,
  type DaemonFields,
  type ResumeDaemonOptions,
  resumeDaemon,
  type SpawnDaemonOptions,
  spawnDaemon,
} from './daemon.js'
// --- Daemon queues (issue 14) ---
export {
  assertDaemonId,
  createDaemonQueue,
  DaemonQueue,
  openDaemonQueue,
  type QueueCounts,
} from './daemon-queue.js'
export {
  DAEMON_STATES,
  type DaemonSnapshot,
  type DaemonSnapshotOptions,
  type DaemonState,
  daemonSnapshot,
  type InflightEvent,
} from './daemon-snapshot.js'
export {
  DEFAULT_VISIBILITY_TIMEOUT_MS,
  Delivery,
  type DeliveryOptions,
  deliveryOptionsSchema,
} from './delivery.js'
export {
  DAEMON_ERROR_CODES,
  type DaemonErrorCode,
  RUNTIME_ERROR_CODES,
  type RuntimeErrorCode,
} from './errors.js'
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
  DAEMONS_PREFIX,
  daemonConfigKey,
  daemonEventKey,
  daemonHeadKey,
  daemonTailKey,
  handoffKey,
  SESSIONS_PREFIX,
  sessionDataPrefix,
  sessionMarkerKey,
  WORKERS_PREFIX,
  workerSnapshotKey,
} from './layout.js'
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
} from './queue-records.js'
export {
  parseResumeConditions,
  type ResumeConditions,
  type ResumeConditionsInput,
  resumeConditionsSchema,
  TIMEOUT_ACTIONS,
} from './resume-conditions.js'
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
export { type WaitForIdleOptions, waitForIdle, waitForIdleOptionsSchema } from './wait-idle.js'
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
