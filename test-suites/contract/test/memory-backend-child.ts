import { type Backend, createRecordBackend } from '@agent-state/core'
import { createMemoryBackend, createMemoryRecordStore } from '@agent-state/memory'

/**
 * Child factory for the memory backends' `process` option: the
 * change-notification tier's release check runs a watch in a child process
 * and expects it to exit on its own (memory claims no multi-process tier, so
 * nothing else uses it). `{ records: true }`: the record-store path.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  if ((options as { records?: boolean } | null)?.records === true) {
    return createRecordBackend(createMemoryRecordStore())
  }
  return createMemoryBackend({ namespace: ctx.namespace })
}
