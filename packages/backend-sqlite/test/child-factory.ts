import type { Backend } from '@agent-state/core'
import { createSqliteBackend, steppedSqliteClock } from '../src/index.js'

/**
 * Loaded by the contract suite's multi-process and crash tiers in child
 * processes (`node --conditions=@agent-state/source --import tsx`): opens the
 * same database file as the parent, in the test's namespace, on real time.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { path, synchronous } = options as { path: string; synchronous?: 'FULL' | 'NORMAL' }
  return createSqliteBackend({
    path,
    namespace: ctx.namespace,
    ...(synchronous === undefined ? {} : { synchronous }),
  })
}

/**
 * For the contract suite's frozen-writer tier: the same backend, whose clock
 * reports the step `in-transaction`. Every write reads the clock inside its
 * IMMEDIATE transaction, so a child stopping itself there is frozen holding
 * the database lock.
 */
export function createSteppedBackend(
  options: unknown,
  ctx: { namespace: string },
  onStep: (step: string) => void,
): Backend {
  const { path } = options as { path: string }
  return createSqliteBackend({
    path,
    namespace: ctx.namespace,
    clock: steppedSqliteClock(onStep),
  })
}
