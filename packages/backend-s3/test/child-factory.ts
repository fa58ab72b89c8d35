import type { Backend } from '@agent-state/core'
import { createS3Backend, type S3BackendOptions } from '../src/index.js'

/**
 * Loaded by the contract suite's multi-process and crash tiers in child
 * processes: `options` are the JSON settings of the test RGW (endpoint,
 * bucket, credentials), `ctx.namespace` the test's namespace.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  return createS3Backend({ ...(options as S3BackendOptions), namespace: ctx.namespace })
}
