import type { Backend } from '@agent-state/core'
import { createFilesBackend } from '../src/index.js'

/**
 * The contract suite's `process` option: a child process opens the same store with this. The
 * durability check kills such a child (SIGKILL) right after an acknowledged write and reads it
 * back here: a backend that claims `durable` proves it, whether or not it claims `multiProcess`.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { root } = options as { root: string }
  return createFilesBackend({ root, namespace: ctx.namespace })
}
