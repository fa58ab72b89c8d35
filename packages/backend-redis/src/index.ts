export { type FailurePhase, mapRedisError, redactSecrets, sanitizeError } from './error-mapping.js'
export { createBackendFromUrl, parseRedisUrl } from './from-url.js'
export {
  DEFAULT_MAX_VALUE_BYTES,
  type RedisBackendOptions,
  redisOptionsSchema,
} from './options.js'
export { createRedisBackend, openRedisBackend } from './redis-backend.js'
export { type RedisKeyLayout, redisKeyLayout } from './redis-keys.js'
