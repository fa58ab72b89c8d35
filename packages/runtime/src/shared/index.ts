export type { JsonValue } from './canonical-json.js'
export {
  DAEMON_ERROR_CODES,
  type DaemonErrorCode,
  RUNTIME_ERROR_CODES,
  type RuntimeErrorCode,
  WAKE_ERROR_CODES,
  type WakeErrorCode,
} from './errors.js'
export {
  ID_PATTERN,
  isValidId,
} from './ids.js'
