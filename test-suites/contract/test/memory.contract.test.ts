import { fileURLToPath } from 'node:url'
import { AgentStateError, createRecordBackend } from '@agent-state/core'
import {
  createMemoryBackend,
  createMemoryRecordMap,
  createMemoryRecordStore,
  createMemoryStore,
} from '@agent-state/memory'
import { describeBackendContract } from '../src/index.js'

/** Why the memory backend's watch cannot be interrupted. */
export const MEMORY_IN_PROCESS =
  'hints are handed over in-process inside the write: there is no channel to lose'

const childModule = fileURLToPath(new URL('./memory-backend-child.ts', import.meta.url))
const store = createMemoryStore()
describeBackendContract({
  name: 'memory',
  create: (ctx) =>
    createMemoryBackend({
      store,
      namespace: ctx.namespace,
      clock: ctx.clock,
      maxValueBytes: 4 * 1024 * 1024,
    }),
  process: { module: childModule },
  watchInterrupt: { notApplicable: MEMORY_IN_PROCESS },
})

// The third-party path: the record primitive wrapped by core. Namespaces share one map, so
// prefix record keys with nothing: each test's keys stay isolated by a per-namespace map.
// The first run uses every optional method of the store (`remove`, `watch` with its claim,
// `destroy`). The second lets puts start from each instance's cached state (as on S3), so the
// concurrency and linearizability checks race stale guesses against each other, over the minimal
// store: the required methods only, plus a `watch` it does not claim (core must then give the
// Backend no watch), and a `close` that refuses a second call (core closes a store once). Between them both ways a delete ends run (a removal where no lease was ever
// issued, a tombstone for every delete).
for (const versionChangesWithBytes of [false, true]) {
  const maps = new Map<string, ReturnType<typeof createMemoryRecordMap>>()
  describeBackendContract({
    name: versionChangesWithBytes ? 'memory-records-cached' : 'memory-records',
    create: (ctx) => {
      let records = maps.get(ctx.namespace)
      if (records === undefined) {
        records = createMemoryRecordMap()
        maps.set(ctx.namespace, records)
      }
      const store = createMemoryRecordStore({ records, versionChangesWithBytes })
      if (!versionChangesWithBytes) return createRecordBackend(store, { clock: ctx.clock })
      const { remove: _remove, destroy: _destroy, capabilities, ...minimal } = store
      const { changeNotification: _claim, ...unclaimed } = capabilities
      let closed = false
      const close = async () => {
        if (closed) throw new AgentStateError('CLOSED', 'this store is closed already')
        closed = true
      }
      return createRecordBackend(
        { ...minimal, capabilities: unclaimed, close },
        { clock: ctx.clock },
      )
    },
    process: { module: childModule, options: { records: true } },
    ...(versionChangesWithBytes ? {} : { watchInterrupt: { notApplicable: MEMORY_IN_PROCESS } }),
  })
}
