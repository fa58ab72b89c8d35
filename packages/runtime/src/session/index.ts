export {
  type ConflictListener,
  type ConflictPolicy,
  type ConflictWarning,
  processWarningListener,
} from './conflict-policy.js'
export {
  type HandoffArtifact,
  type HandoffEnvelope,
  handoffArtifactSchema,
} from './handoff.js'
export {
  openSession,
  resumeSession,
  type Session,
  type SessionOptions,
} from './session.js'
export {
  handoffKeyName,
  redactLocation,
  type StateHandle,
  stateHandleSchema,
} from './session-handle.js'
export {
  type ListSessionsOptions,
  listSessions,
  type SessionPage,
} from './session-list.js'
export {
  inspectSession,
  type PolicyOverride,
  type SessionInfo,
} from './session-marker.js'
