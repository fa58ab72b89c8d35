import { type Backend, openBackend } from '@agent-state/core'
import { backendLoading } from './backend-importer.js'

/**
 * The contract suite's child-process factory for `agent-state verify`: opens
 * the same URL in each child process, in the namespace the suite assigns.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Promise<Backend> {
  const { url } = options as { url: string }
  return openBackend(url, { namespace: ctx.namespace, ...backendLoading(url) })
}
