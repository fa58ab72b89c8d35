import { fileURLToPath } from 'node:url'
import { createRecordBackend } from '@agent-state/core'
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
// concurrency and linearizability checks race stale guesses against each other. It also runs
// without the store's optional `remove` and `watch` (so without change notification, which core
// then does not claim): both ways a delete can end (a removal where no lease was ever issued in
// the first run, a tombstone for every delete in the second) and a Backend over a store that
// cannot watch are tested.
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
      const { remove: _remove, watch: _watch, ...plain } = store
      return createRecordBackend(versionChangesWithBytes ? plain : store, { clock: ctx.clock })
    },
    process: { module: childModule, options: { records: true } },
    ...(versionChangesWithBytes ? {} : { watchInterrupt: { notApplicable: MEMORY_IN_PROCESS } }),
  })
}
