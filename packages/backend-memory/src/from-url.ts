import { type Backend, type BackendUrlOptions, invalidBackendUrl } from '@agent-state/core'
import { createMemoryBackend } from './memory-backend.js'

/**
 * Opens the memory backend from a `memory:` URL (nothing after the colon).
 * Every `memory:` backend of one process shares one store, so a namespace
 * opened twice sees the same keys.
 */
export function createBackendFromUrl(url: string, options: BackendUrlOptions = {}): Backend {
  if (url !== 'memory:' && url !== 'memory://') {
    throw invalidBackendUrl('memory', String(url), 'a memory backend URL is just "memory:"')
  }
  return createMemoryBackend(options)
}
