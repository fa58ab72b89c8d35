export {
  assertLeaseShape,
  assertValue,
  checkAcquire,
  checkDelete,
  checkPut,
  checkPutOptions,
  DEFAULT_LIST_LIMIT,
  MAX_LEASE_TTL_MS,
  MAX_LIST_LIMIT,
  MIN_LEASE_TTL_MS,
  type NormalizedListOptions,
  normalizeListOptions,
  normalizeWriter,
} from './arguments.js'
export {
  type AcquireLeaseOptions,
  type Backend,
  type Capabilities,
  CONTRACT_VERSION,
  DEFAULT_MAX_VALUE_BYTES,
  type DeleteOptions,
  type Lease,
  type LeaseClock,
  type ListEntry,
  type ListOptions,
  type ListPage,
  type PutOptions,
  type StoredValue,
  type ValueMeta,
  type WriterIdentity,
} from './backend.js'
export {
  type BackendFailureOptions,
  backendFailure,
  type FailedOperation,
} from './backend-failure.js'
export {
  type BackendOptionIssue,
  invalidBackendUrl,
  parseBackendOptions,
  parseOptions,
  readUrlQuery,
  type UrlQueryParameterKind,
  type UrlQueryValues,
} from './backend-options.js'
export {
  BACKEND_PACKAGES,
  registerBackendScheme,
  registeredBackendSchemes,
  unregisterBackendScheme,
} from './backend-schemes.js'
export { compareUtf8, sortUtf8 } from './byte-order.js'
export {
  assertWatchPrefix,
  type ChangeHint,
  type ChangeNotificationCapability,
  createHintStream,
  createWatchSet,
  failedWatch,
  type HintStream,
  type HintStreamOptions,
  keyMatchesPrefix,
  MAX_PENDING_HINTS,
  RESYNC_HINT,
  setWatchInterrupt,
  WATCH_INTERRUPT,
  type WatchInterruptSeam,
  type WatchOptions,
  type WatchSet,
  watchInterruptOf,
} from './change-notification.js'
export {
  createPollingWatcher,
  type PollingWatcher,
  type PollingWatcherOptions,
} from './change-polling.js'
export { type Clock, createManualClock, type ManualClock, systemClock } from './clock.js'
export { fenceLost, fenceUnsupported } from './cross-key-fence.js'
export { type CursorPosition, decodeCursor, encodeCursor } from './cursor.js'
export {
  AgentStateError,
  type AgentStateErrorOptions,
  BACKEND_ERROR_CODES,
  type BackendErrorCode,
  type ErrorCode,
  isAgentStateError,
} from './errors.js'
export {
  checkGetManyKeys,
  GET_MANY_CONCURRENCY,
  type GetManyOptions,
  getMany,
  getManyByGets,
  MAX_GET_MANY_KEYS,
  spreadDistinct,
} from './get-many.js'
export { afterPosition, type KeyRange, prefixEnd, prefixRange } from './key-range.js'
export {
  ABSENT_STATE,
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  checkFence,
  checkWriteLease,
  liveLease,
  metaOf,
  newVersion,
  randomSuffix,
} from './key-state.js'
export {
  assertValidKey,
  escapeForDisplay,
  isValidKey,
  keyProblem,
  MAX_KEY_BYTES,
  quoteForMessage,
  RESERVED_SEGMENT_PREFIX,
  utf8ByteLength,
} from './keys.js'
export {
  collectListPage,
  GROUPED_FIRST_BATCH,
  type ListBatching,
  type ScanBatch,
  type ScanFunction,
} from './list-page.js'
export { walkList } from './list-walk.js'
export { mapLimited } from './map-limited.js'
export {
  describeModuleLoadFailure,
  isPackageMissing,
  type ModuleLoadFailure,
} from './module-load-failure.js'
export type {
  NativeQueue,
  NativeQueueAppend,
  NativeQueueAppended,
  NativeQueueCapability,
  NativeQueueClaim,
  NativeQueueClaimed,
  NativeQueueKeys,
  NativeQueueSettle,
} from './native-queue.js'
export {
  type BackendUrlModule,
  type BackendUrlOptions,
  DEFAULT_BACKEND_URL,
  namespaceSchema,
  type OpenBackendOptions,
  openBackend,
  redactUrl,
} from './open-backend.js'
export {
  installCommand,
  type PackageManager,
  runScriptCommand,
  userPackageManager,
} from './package-manager.js'
export {
  appendRoom,
  appendStep,
  assertQueueEvents,
  checkQueueKeys,
  claimStep,
  grantDelivery,
  type QueueDecisions,
  type QueueRows,
  queueEventKey,
  queueRecordCorrupt,
  settleStep,
  storedValueOf,
} from './queue-steps.js'
export { createRecordBackend, type RecordBackendOptions } from './record-backend.js'
export { decodeKeyState, encodeKeyState, type KeyState, type StoredLease } from './record-codec.js'
export {
  RECORD_OVERHEAD_BYTES,
  type RecordCondition,
  type RecordScanOptions,
  type RecordStore,
  recordChanged,
  type ScannedRecord,
  type VersionedRecord,
} from './record-store.js'
export { backendSchema, keyPrefixSchema, writerIdentitySchema } from './shared-schemas.js'
