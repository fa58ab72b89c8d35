import type { Backend } from '@agent-state/core'
import { createFsBackend } from '../src/index.js'

/**
 * Loaded by the contract suite in child processes (multi-process and crash
 * tiers): opens the fs backend on the parent's root in the test's namespace.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { root, maxValueBytes } = options as { root: string; maxValueBytes?: number }
  return createFsBackend({
    root,
    namespace: ctx.namespace,
    ...(maxValueBytes === undefined ? {} : { maxValueBytes }),
  })
}
