import { AgentStateError, type Backend, type BackendUrlOptions } from '@agent-state/core'
import { createMemoryBackend } from './memory-backend.js'

/**
 * Opens the memory backend from a `memory:` URL (nothing after the colon).
 * Every `memory:` backend of one process shares one store, so a namespace
 * opened twice sees the same keys.
 */
export function createBackendFromUrl(url: string, options: BackendUrlOptions = {}): Backend {
  if (url !== 'memory:' && url !== 'memory://') {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `A memory backend URL is just "memory:" (got ${JSON.stringify(url)})`,
    )
  }
  return createMemoryBackend(options)
}
