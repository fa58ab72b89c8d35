import type { Backend } from '@agent-state/core'
import { openPostgresBackend, type PostgresBackendOptions } from '../src/index.js'
import { openWithHooks } from '../src/postgres-backend.js'

/**
 * Loaded by the contract suite's multi-process and crash tiers in child
 * processes: opens the backend on the same server as the parent, in the
 * test's namespace.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Promise<Backend> {
  return openPostgresBackend({ ...(options as PostgresBackendOptions), namespace: ctx.namespace })
}

/**
 * For the contract suite's frozen-writer tier: the same backend, reporting
 * the step `before-write` right before a write's conditional statement
 * (a value write's only statement; a lease step's second). A holder stopped there holds no lock and no transaction (each
 * statement commits on its own), so contenders take over once its lease expires.
 */
export function createSteppedBackend(
  options: unknown,
  ctx: { namespace: string },
  onStep: (step: string) => void,
): Promise<Backend> {
  return openWithHooks(
    { ...(options as PostgresBackendOptions), namespace: ctx.namespace },
    { beforeWrite: () => onStep('before-write') },
  )
}
