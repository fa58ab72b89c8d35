import type { Backend } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'

/**
 * Child factory for the memory backend's `process` option: the
 * change-notification tier's release check runs a watch in a child process
 * and expects it to exit on its own (memory claims no multi-process tier, so
 * nothing else uses it).
 */
export function createBackend(_options: unknown, ctx: { namespace: string }): Backend {
  return createMemoryBackend({ namespace: ctx.namespace })
}
