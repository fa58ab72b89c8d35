import type { Backend } from '@agent-state/core'
import { createRedisBackend, type RedisBackendOptions } from '../src/index.js'

/**
 * Loaded by the contract suite in child processes (multi-process and crash
 * tiers): opens the Redis backend from JSON options in the given namespace.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  return createRedisBackend({ ...(options as RedisBackendOptions), namespace: ctx.namespace })
}
