import { AgentStateError } from '@agent-state/core'

/**
 * The runtime's own error codes, added to the contract's codes. Every runtime
 * failure is an `AgentStateError` with one of these (or a contract code from
 * the backend underneath); branch on `code`, never on the message.
 */
export const RUNTIME_ERROR_CODES = [
  /** A session or worker id that could escape its prefix or collide with another. */
  'INVALID_SESSION_ID',
  'INVALID_WORKER_ID',
  /** `resumeSession` of a session that was never opened. */
  'SESSION_NOT_FOUND',
  /** Policy `error`: another writer wrote the key last. */
  'WRITER_CONFLICT',
  /** `handoff(summary)` with a summary that is not plain JSON. */
  'INVALID_HANDOFF',
  /** The stored handoff envelope is not valid JSON or fails its schema. */
  'HANDOFF_CORRUPT',
  /** The stored handoff envelope has a newer schema version than this runtime reads. */
  'HANDOFF_INCOMPATIBLE',
  /** Suspend or complete of a worker that is done or closed (HARN-SUS-001, docs/runtime/errors.md). */
  'WORKER_NOT_RUNNING',
  /** Resume or close of a worker that is running or done (HARN-SUS-003, docs/runtime/errors.md). */
  'WORKER_NOT_SUSPENDED',
  /** Another owner holds the worker's snapshot lease (HARN-SUS-006, docs/runtime/errors.md). */
  'CONCURRENT_RESUME',
  /** Resume of a closed worker (HARN-SUS-010, docs/runtime/errors.md). */
  'WORKER_CLOSED',
  /** `startWorker` with an id that already has a snapshot. */
  'WORKER_EXISTS',
  /** Resume conditions that fail their schema; `context.path` names the field (HARN-SUS-002). */
  'INVALID_RESUME_CONDITIONS',
  /** Resume input that is not plain JSON or fails the caller's schema (HARN-SUS-009). */
  'INVALID_RESUME_INPUT',
  /** An empty or whitespace-only suspend reason (HARN-SUS-005). */
  'INVALID_SUSPEND_REASON',
  /** A pre-suspend hook denied the suspend; the worker stays running. */
  'SUSPEND_DENIED',
  /** A pre-resume hook denied the resume; the worker stays suspended. */
  'RESUME_DENIED',
  /** No snapshot is stored for the worker. */
  'SNAPSHOT_MISSING',
  /** The stored snapshot is not valid JSON, fails its checksum or its schema. */
  'SNAPSHOT_CORRUPT',
  /** The stored snapshot has a schema version this runtime cannot read. */
  'SNAPSHOT_INCOMPATIBLE',
  // --- Resume owners and conditions (docs/runtime/workers.md) ---
  /** A resume-condition trigger could not be registered (HARN-SUS-007, docs/runtime/errors.md). */
  'TRIGGER_REGISTRATION_FAILED',
  /** `timeout.onTimeout` is not a supported timeout action (HARN-SUS-008, docs/runtime/errors.md). */
  'UNSUPPORTED_TIMEOUT_ACTION',
  /** A suspend initiator other than `self`, `parent`, `operator` or `triggered`. */
  'INVALID_INITIATOR',
  /** A completion result that is not a plain JSON value. */
  'INVALID_WORKER_RESULT',
  /** `quarantineWorkerSnapshot` of a snapshot that verifies: retire it with `closeWorker`. */
  'SNAPSHOT_NOT_CORRUPT',
  // --- Runs and the effect ledger (docs/runtime/runs-and-effects.md) ---
  /** A run or effect id that could escape its prefix or collide with another. */
  'INVALID_RUN_ID',
  'INVALID_EFFECT_ID',
  /** Another live owner holds the run; `context.holder` and `context.expiresAt` name it. */
  'RUN_OWNED',
  /** `resumeRun` of a run that was never opened. */
  'RUN_NOT_FOUND',
  /** `effect()` or `commitStep()` on a completed run. */
  'RUN_COMPLETED',
  /** A ledger record the run refers to (an effect, a step) is not stored. */
  'RUN_RECORD_MISSING',
  /** A ledger record is not valid JSON, fails its checksum or its schema. */
  'RUN_RECORD_CORRUPT',
  /** A ledger record has a schema version this runtime cannot read. */
  'RUN_RECORD_INCOMPATIBLE',
  /** Ledger records contradict each other or their key (confirmed and failed, a newer attempt than the run's). */
  'RUN_RECORD_CONTRADICTORY',
  /** A context reference of the run (session key, artifact) is missing at resume. */
  'RUN_CONTEXT_MISSING',
  /** A caller's revalidation check failed at resume; nothing was dispatched. */
  'RUN_REVALIDATION_FAILED',
  /** Effects whose outcome cannot be reconciled; `context.effects` lists them for an operator. */
  'RUN_NEEDS_ATTENTION',
  /** The same effect id called with another kind or request than the one recorded. */
  'EFFECT_CONFLICT',
  /** No handler is registered for an effect's kind. */
  'EFFECT_KIND_UNKNOWN',
  /** The effect is recorded `failed`: the target definitely rejected it. */
  'EFFECT_FAILED',
  /** The effect's outcome is unknown (timeout, crash, indeterminate storage); it is never `failed`. */
  'EFFECT_UNKNOWN',
  /** An operator resolution that does not apply to the effect's state. */
  'INVALID_RESOLUTION',
] as const

/** A code the runtime adds to the contract's codes. */
export type RuntimeErrorCode = (typeof RUNTIME_ERROR_CODES)[number]

/** Builds a non-retryable runtime error with log-safe context. */
export function runtimeError(
  code: RuntimeErrorCode,
  message: string,
  context: Record<string, unknown> = {},
  cause?: unknown,
): AgentStateError {
  return new AgentStateError(code, message, {
    retryable: code === 'CONCURRENT_RESUME' || code === 'RUN_OWNED',
    context,
    ...(cause === undefined ? {} : { cause }),
  })
}

// --- Daemon queues (issue 14) ---

/**
 * The daemon queues' error codes (docs/runtime/daemons.md). Kept in their own list beside
 * {@link RUNTIME_ERROR_CODES}; every one is an `AgentStateError` code.
 */
export const DAEMON_ERROR_CODES = [
  /** `trigger` on a queue holding `capacity` events (pending plus in flight); nothing was stored. */
  'QUEUE_FULL',
  /** A trigger event that is not plain JSON (undefined, a function, NaN, a cycle...). */
  'INVALID_EVENT',
  /** A trigger event whose JSON is larger than the queue's `maxEventBytes`. */
  'EVENT_TOO_LARGE',
  /** A queue capacity that is not an integer from 1 to `MAX_QUEUE_CAPACITY`, or bad queue options. */
  'INVALID_QUEUE_OPTIONS',
  /** A daemon id that does not match `ID_PATTERN`. */
  'INVALID_DAEMON_ID',
  /** No daemon queue is stored under that id. */
  'DAEMON_NOT_FOUND',
  /** `spawnDaemon` / `createDaemonQueue` with an id that is taken. */
  'DAEMON_EXISTS',
  /** `claim` while another consumer's delivery is live (retryable: it acks, releases or expires). */
  'DELIVERY_IN_FLIGHT',
  /** A queue record that is not valid JSON, fails its schema, or breaks the queue's invariants. */
  'QUEUE_CORRUPT',
  /** The daemon was stopped (or finished) while a caller waited for it to become idle. */
  'DAEMON_STOPPED',
  /** `waitForIdle` did not see the daemon idle, empty and at the iteration count in time. */
  'WAIT_TIMEOUT',
  /** A native-path queue used (or created) on a backend without the `nativeQueue` capability. */
  'QUEUE_PATH_UNAVAILABLE',
] as const

/** A code of the daemon queues. */
export type DaemonErrorCode = (typeof DAEMON_ERROR_CODES)[number]

/** Builds a daemon-queue error with log-safe context (never event contents). */
export function daemonError(
  code: DaemonErrorCode,
  message: string,
  context: Record<string, unknown> = {},
  cause?: unknown,
): AgentStateError {
  return new AgentStateError(code, message, {
    retryable: code === 'DELIVERY_IN_FLIGHT' || code === 'QUEUE_FULL' || code === 'WAIT_TIMEOUT',
    context,
    ...(cause === undefined ? {} : { cause }),
  })
}

// --- Wakes (docs/runtime/wakes.md) ---

/**
 * The wake dispatcher's error codes (docs/runtime/wakes.md). Kept in their own list beside
 * {@link RUNTIME_ERROR_CODES}; every one is an `AgentStateError` code.
 */
export const WAKE_ERROR_CODES = [
  /** A wake registration that fails its schema (target, cause, due time, payload); `context.path` names the field. */
  'INVALID_WAKE',
  /** A wake id that is not `<13-digit due ms>-<32 hex digits>`. */
  'INVALID_WAKE_ID',
  /** No wake is stored under that id, pending or archived. */
  'WAKE_NOT_FOUND',
  /** A wake record that is not valid JSON, fails its schema, or is stored under another key than its id's. */
  'WAKE_CORRUPT',
  /** `cancelWake` waited for a dispatcher's lease on the wake and it was still held (retryable). */
  'WAKE_BUSY',
  /** Dispatcher options that fail their schema. */
  'INVALID_DISPATCHER_OPTIONS',
  /** `publishEvent` on a topic that is not a valid name (`ID_PATTERN`: letters, digits, `_.-`, at most 128). */
  'INVALID_EVENT_TOPIC',
  /** `publishEvent` with a payload that is not plain JSON (undefined, a function, NaN, a cycle...). */
  'INVALID_EVENT_PAYLOAD',
  /** `publishEvent` with a payload larger than `MAX_EVENT_PAYLOAD_BYTES` as JSON. */
  'EVENT_PAYLOAD_TOO_LARGE',
  /** No event is stored under that topic and id. */
  'EVENT_NOT_FOUND',
  /** A stored event or resume registration that is not valid JSON or fails its schema. */
  'EVENT_CORRUPT',
] as const

/** A code of the wake dispatcher. */
export type WakeErrorCode = (typeof WAKE_ERROR_CODES)[number]

/** Builds a wake error with log-safe context (never payloads). */
export function wakeError(
  code: WakeErrorCode,
  message: string,
  context: Record<string, unknown> = {},
  cause?: unknown,
): AgentStateError {
  return new AgentStateError(code, message, {
    retryable: code === 'WAKE_BUSY',
    context,
    ...(cause === undefined ? {} : { cause }),
  })
}
