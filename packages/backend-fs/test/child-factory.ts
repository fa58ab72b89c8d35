import type { Backend } from '@agent-state/core'
import { createFsBackend, createFsBackendWithHooks, FS_WRITE_STEPS } from '../src/index.js'

type ChildOptions = { root: string; maxValueBytes?: number }

/**
 * Loaded by the contract suite in child processes (multi-process and crash
 * tiers): opens the fs backend on the parent's root in the test's namespace.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { root, maxValueBytes } = options as ChildOptions
  return createFsBackend({
    root,
    namespace: ctx.namespace,
    ...(maxValueBytes === undefined ? {} : { maxValueBytes }),
  })
}

/**
 * For the frozen-writer check (`frozen-writer-check.ts`): the same backend,
 * calling `onStep` at each step of every write, so a child can stop itself
 * at an exact point of a write.
 */
export function createSteppedBackend(
  options: unknown,
  ctx: { namespace: string },
  onStep: (step: string) => void,
): Backend {
  const { root } = options as ChildOptions
  return createFsBackendWithHooks(
    { root, namespace: ctx.namespace },
    { onStep: (step) => onStep(step) },
  )
}

/** The steps a stepped backend reports, in order. */
export const WRITE_STEPS = FS_WRITE_STEPS
