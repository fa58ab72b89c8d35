export { createBackendFromUrl, parseRedisUrl } from './from-url.js'
export { type RedisKeyLayout, redisKeyLayout } from './key-layout.js'
export {
  DEFAULT_MAX_VALUE_BYTES,
  type RedisBackendOptions,
  type ResolvedRedisOptions,
  redisOptionsSchema,
} from './options.js'
export { createRedisBackend, openRedisBackend } from './redis-backend.js'
