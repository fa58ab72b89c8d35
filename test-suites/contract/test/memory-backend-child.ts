import { type Backend, createRecordBackend } from '@agent-state/core'
import { createMemoryBackend, createMemoryRecordStore } from '@agent-state/memory'

/**
 * Child factory for the memory backends' `process` option: the
 * change-notification tier's release check runs a watch in a child process
 * and expects it to exit on its own (memory claims neither `durable` nor
 * `multiProcess`, so no other tier of the memory suites uses it). The
 * capability mutants (capability-mutants.ts) use it to disprove a false
 * `durable` or `multiProcess` claim: the child's memory is its own.
 * `{ records: true }`: the record-store path.
 */
export function createBackend(options: unknown, ctx: { namespace: string }): Backend {
  if ((options as { records?: boolean } | null)?.records === true) {
    return createRecordBackend(createMemoryRecordStore())
  }
  return createMemoryBackend({ namespace: ctx.namespace })
}
