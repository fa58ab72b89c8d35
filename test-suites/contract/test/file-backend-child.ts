import { type Backend, createRecordBackend } from '@agent-state/core'
import { createFileRecordStore, type FileStoreMode } from './file-record-store.js'

/** Child factory for the suite's `process` option: the test-only file record store. */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { root, mode } = options as { root: string; mode?: FileStoreMode }
  return createRecordBackend(
    createFileRecordStore({ root, namespace: ctx.namespace, ...(mode ? { mode } : {}) }),
  )
}
