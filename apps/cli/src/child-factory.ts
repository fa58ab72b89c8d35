import { type Backend, openBackend } from '@agent-state/core'
import { backendLoading } from './backend-importer.js'
import { openSteppedBackend } from './verify-profile.js'

/**
 * The contract suite's child-process factory for `agent-state verify`: opens
 * the same URL in each child process, in the namespace the suite assigns.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Promise<Backend> {
  const { url } = options as { url: string }
  return openBackend(url, { namespace: ctx.namespace, ...backendLoading(url) })
}

/**
 * For the frozen-writer tier: the same backend, reporting the steps of its
 * write as its package's own suite does (see `frozenWriterProfile`).
 */
export function createSteppedBackend(
  options: unknown,
  ctx: { namespace: string },
  onStep: (step: string) => void,
): Promise<Backend> {
  const { url } = options as { url: string }
  return openSteppedBackend(url, ctx.namespace, onStep)
}
