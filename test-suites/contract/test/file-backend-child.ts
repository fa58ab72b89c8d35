import { type Backend, createRecordBackend } from '@agent-state/core'
import { createFileRecordStore, type FileStoreMode } from './file-record-store.js'

/** Child factory for the suite's `process` option: the test-only file record store. */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  const { root, mode } = options as { root: string; mode?: FileStoreMode }
  return createRecordBackend(
    createFileRecordStore({ root, namespace: ctx.namespace, ...(mode ? { mode } : {}) }),
  )
}

/** The same store, reporting its write step, for the frozen-writer tier's exact-step stops. */
export function createSteppedBackend(
  options: unknown,
  ctx: { namespace: string },
  onStep: (step: string) => void,
): Backend {
  const { root, mode } = options as { root: string; mode?: FileStoreMode }
  return createRecordBackend(
    createFileRecordStore({ root, namespace: ctx.namespace, onStep, ...(mode ? { mode } : {}) }),
  )
}
