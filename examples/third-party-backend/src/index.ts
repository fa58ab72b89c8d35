import { resolve } from 'node:path'
import {
  AgentStateError,
  type Backend,
  type BackendUrlOptions,
  type Clock,
  createRecordBackend,
  invalidBackendUrl,
  namespaceSchema,
} from '@agent-state/core'
import { createFilesRecordStore } from './files-record-store.js'

export { createFilesRecordStore, type FilesRecordStoreOptions } from './files-record-store.js'

/** Options of {@link createFilesBackend}. */
export interface FilesBackendOptions {
  /** Directory of the store. */
  readonly root: string
  /** Namespace inside it. Default `"default"`. */
  readonly namespace?: string
  /** Clock for `updatedAt` and lease expiry (tests move it by hand). */
  readonly clock?: Clock
}

/** The whole Backend contract over the files record store, built by core. */
export function createFilesBackend(options: FilesBackendOptions): Backend {
  const namespace = namespaceSchema.safeParse(options.namespace ?? 'default')
  if (!namespace.success) {
    // The namespace becomes a directory name: never let it climb out of the root.
    throw new AgentStateError('INVALID_ARGUMENT', 'Invalid namespace: 1-128 of [A-Za-z0-9._-]')
  }
  const store = createFilesRecordStore({ root: resolve(options.root), namespace: namespace.data })
  return createRecordBackend(store, options.clock === undefined ? {} : { clock: options.clock })
}

/**
 * What `openBackend` and `agent-state --module` call: `files:./dir` (a path
 * relative to the working directory) or `files:/abs/dir`.
 */
export function createBackendFromUrl(url: string, options: BackendUrlOptions): Backend {
  const root = url.replace(/^files:/i, '')
  if (root.length === 0 || root.includes('?') || root.includes('#')) {
    throw invalidBackendUrl('files', url, 'expected files:<directory>')
  }
  return createFilesBackend({ root, ...options })
}
