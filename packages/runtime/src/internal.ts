/**
 * `@agent-state/runtime/internal`: the runtime's storage layout and record codecs, for tools
 * that read or write the runtime's records directly instead of through its API: the
 * `agent-state` CLI's views and demo, and the benchmarks.
 *
 * What is here is the storage format, not an application API: the key of every record
 * (`sessions/<id>/...`, `workers/<id>/snapshot.json`, `daemons/<id>/...`, `runs/<id>/...`,
 * `wakes/...`), the canonical JSON and checksum every record is sealed with, and the format
 * names, schema versions and schemas of the records. It changes only with the storage format itself (a new
 * schema version), and then in the same release; an application that writes these records by
 * hand bypasses the runtime's leases and checks. See `docs/runtime/` for what each record holds.
 *
 * @packageDocumentation
 */
export {
  encodeRecord,
  eventRecordSchema,
} from './daemon/queue-records.js'
export { runStateMarkerKey, runStatePrefix } from './run/effect-state-index.js'
export {
  RUN_RECORD_FORMAT,
  RUN_RECORD_KINDS,
  RUN_RECORD_OLDEST_READ_VERSION,
  RUN_RECORD_SCHEMA_VERSION,
  type RunRecordKind,
} from './run/run-codec.js'
export { readStep } from './run/run-steps.js'
export {
  decodeHandoffEnvelope,
  HANDOFF_KEY,
  HANDOFF_VERSION,
  handoffEnvelopeSchema,
} from './session/handoff.js'
export { readMarker, type SessionMarker } from './session/session-marker.js'
export {
  canonicalJson,
  checksumOf,
  jsonValueSchema,
} from './shared/canonical-json.js'
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
  WAKE_BUCKET_MS,
  WAKES_DUE_PREFIX,
  WAKES_RECORDS_PREFIX,
  WORKERS_PREFIX,
  wakeBucketOf,
  wakeBucketPrefix,
  wakeDueKey,
  wakeRecordKey,
  webhookTriggerKey,
  workerSnapshotKey,
  workerSuspendRequestKey,
} from './shared/layout.js'
export {
  decodeWake,
  encodeWake,
  WAKE_RECORD_FORMAT,
} from './wake/wake-records.js'
export {
  AUDIT_EVENTS,
  auditEntrySchema,
  MAX_AUDIT_ENTRIES,
} from './worker/audit.js'
export {
  decodeSnapshot,
  encodeSnapshot,
  resumeReminderSchema,
  SNAPSHOT_FORMAT,
  SNAPSHOT_SCHEMA_VERSION,
  snapshotBodySchema,
} from './worker/snapshot-codec.js'
