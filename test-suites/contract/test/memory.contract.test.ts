import { fileURLToPath } from 'node:url'
import {
  createRecordBackend,
  setWatchInterrupt,
  type WatchInterruptSeam,
  watchInterruptOf,
} from '@agent-state/core'
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
// The second run lets puts start from each instance's cached state (as on S3), so the
// concurrency and linearizability checks race stale guesses against each other. The second also
// runs without the store's optional `remove`, so both ways a delete can end run: a removal (where
// no lease was ever issued) in the first, a tombstone for every delete in the second.
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
      // A copy without `remove` keeps the store's declared watch seam (not an own enumerable key).
      const { remove: _remove, ...withoutRemove } = store
      const seam = watchInterruptOf(store) as WatchInterruptSeam
      return createRecordBackend(
        versionChangesWithBytes ? setWatchInterrupt(withoutRemove, seam) : store,
        { clock: ctx.clock },
      )
    },
    process: { module: childModule, options: { records: true } },
    watchInterrupt: { notApplicable: MEMORY_IN_PROCESS },
  })
}
