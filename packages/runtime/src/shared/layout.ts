/**
 * Where the runtime keeps its records in a backend. Every key below is a
 * valid contract key. No key is also the parent "directory" of another key
 * (a session's marker, handoff and data live side by side), so backends that
 * map keys onto a file tree never see a file/directory clash. User keys live
 * under their own `data/` prefix, so they can never collide with an internal
 * record and listings hide internals by construction.
 */

/** Prefix of every session's records. */
export const SESSIONS_PREFIX = 'sessions/'
/** Prefix of every worker's records. */
export const WORKERS_PREFIX = 'workers/'

/** The record that says a session exists. */
export function sessionMarkerKey(sessionId: string): string {
  return `${SESSIONS_PREFIX}${sessionId}/session.json`
}

/** The session's handoff envelope. */
export function handoffKey(sessionId: string): string {
  return `${SESSIONS_PREFIX}${sessionId}/handoff.json`
}

/** The prefix of the session's user keys. */
export function sessionDataPrefix(sessionId: string): string {
  return `${SESSIONS_PREFIX}${sessionId}/data/`
}

/** The worker's snapshot; its lease is the worker's ownership lease. */
export function workerSnapshotKey(workerId: string): string {
  return `${WORKERS_PREFIX}${workerId}/snapshot.json`
}

// --- Resume owners and conditions (docs/runtime/workers.md) ---

/** A pending by-id suspend request (`suspendWorker` of a running worker); sibling of the snapshot. */
export function workerSuspendRequestKey(workerId: string): string {
  return `${WORKERS_PREFIX}${workerId}/suspend-request.json`
}

/** Prefix of quarantined records: `quarantine/<id>/record` (the bytes) and `quarantine/<id>/report.json`. */
export const QUARANTINE_PREFIX = 'quarantine/'

// --- Daemon queues (issue 14) ---

/** Prefix of every daemon queue's records. */
export const DAEMONS_PREFIX = 'daemons/'

/** The daemon's immutable configuration (capacity, limits, wake settings); it says the daemon exists. */
export function daemonConfigKey(daemonId: string): string {
  return `${DAEMONS_PREFIX}${daemonId}/daemon.json`
}

/** The consumer side: head sequence, attempts, iterations. Its lease is the delivery lease. */
export function daemonHeadKey(daemonId: string): string {
  return `${DAEMONS_PREFIX}${daemonId}/head.json`
}

/** The producer side: next sequence number and the newest event. */
export function daemonTailKey(daemonId: string): string {
  return `${DAEMONS_PREFIX}${daemonId}/tail.json`
}

/** One queued event; sequence numbers are zero-padded to 16 digits so keys sort in queue order. */
export function daemonEventKey(daemonId: string, seq: number): string {
  return `${DAEMONS_PREFIX}${daemonId}/events/${String(seq).padStart(16, '0')}`
}

// --- Runs and the effect ledger ---

/** Prefix of every run's records. */
export const RUNS_PREFIX = 'runs/'

/** The run's head record (attempt, status, audit); its lease is the run's ownership lease. */
export function runHeadKey(runId: string): string {
  return `${RUNS_PREFIX}${runId}/run.json`
}

/** One record per effect, whatever its state. */
export function runEffectKey(runId: string, effectId: string): string {
  return `${RUNS_PREFIX}${runId}/effects/${effectId}.json`
}

/** The prefix of the run's incomplete-effect markers (empty records, one per effect not yet final). */
export function runOpenPrefix(runId: string): string {
  return `${RUNS_PREFIX}${runId}/open/`
}

/** The marker saying `effectId` may be incomplete; listing these finds incomplete effects by key alone. */
export function runOpenMarkerKey(runId: string, effectId: string): string {
  return `${runOpenPrefix(runId)}${effectId}`
}

/** The prefix of the run's committed steps. */
export function runStepsPrefix(runId: string): string {
  return `${RUNS_PREFIX}${runId}/steps/`
}

/** One record per committed step; the zero-padded sequence keeps them in commit order. */
export function runStepKey(runId: string, seq: number): string {
  return `${runStepsPrefix(runId)}${String(seq).padStart(10, '0')}.json`
}

// --- Wakes (docs/runtime/wakes.md) ---

/** Prefix of every wake record: `wakes/records/<wake id>`, kept after the wake finishes. */
export const WAKES_RECORDS_PREFIX = 'wakes/records/'
/**
 * Prefix of the due-time index: `wakes/due/<bucket>/<wake id>`, one empty marker per unfinished
 * wake. Markers are never leased, so deleting one leaves nothing behind (a key that had a lease
 * keeps a tombstone with its fencing counter) and the index holds only unfinished wakes.
 */
export const WAKES_DUE_PREFIX = 'wakes/due/'

/**
 * Width of one due-time bucket in milliseconds. Part of the storage format: every process
 * registering or dispatching wakes over one namespace must agree on it, so it is a constant.
 */
export const WAKE_BUCKET_MS = 60_000

/** The bucket segment of a due time: the bucket's start in ms, zero-padded to 13 digits so buckets sort in time order. */
export function wakeBucketOf(dueAt: number): string {
  return String(Math.floor(dueAt / WAKE_BUCKET_MS) * WAKE_BUCKET_MS).padStart(13, '0')
}

/** The prefix listing one bucket's markers. */
export function wakeBucketPrefix(bucket: string): string {
  return `${WAKES_DUE_PREFIX}${bucket}/`
}

/** The index marker of an unfinished wake. */
export function wakeDueKey(wakeId: string, dueAt: number): string {
  return `${wakeBucketPrefix(wakeBucketOf(dueAt))}${wakeId}`
}

/** The wake's record; its lease is the firing lease. */
export function wakeRecordKey(wakeId: string): string {
  return `${WAKES_RECORDS_PREFIX}${wakeId}`
}

/**
 * A suspended worker's resume registration: the wakes its resume conditions registered
 * (`ResumeByPresets.localRuntime`), so whatever resumes or closes the worker cancels the others.
 */
export function workerWakesKey(workerId: string): string {
  return `wakes/workers/${workerId}`
}

/**
 * A daemon's idle-wake registration (`wakeIntervalMs`, `watchPaths`, `idleWatchdogAttempts`):
 * the pending interval and path wakes, so at most one of each is pending.
 */
export function daemonWakesKey(daemonId: string): string {
  return `wakes/daemons/${daemonId}`
}

/** Prefix of the workers waiting on an event topic: `wakes/topics/<topic>/<worker id>`. */
export function topicWaitersPrefix(topic: string): string {
  return `wakes/topics/${topic}/`
}

/** The marker saying a suspended worker waits for the next event on `topic`. */
export function topicWaiterKey(topic: string, workerId: string): string {
  return `${topicWaitersPrefix(topic)}${workerId}`
}

/** A published event: `events/<topic>/<event id>`, the id starting with its 13-digit publish time. */
export function eventKey(topic: string, eventId: string): string {
  return `events/${topic}/${eventId}`
}

/**
 * A `webhook` trigger of a suspension (docs/runtime/wakes.md, Webhooks): the worker it wakes and
 * the SHA-256 of its secret (never the secret). Kept after the suspension ends, so a late call is
 * told `410 Gone` rather than `404`.
 */
export function webhookTriggerKey(triggerId: string): string {
  return `wakes/webhooks/${triggerId}`
}
