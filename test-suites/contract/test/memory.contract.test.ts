import { fileURLToPath } from 'node:url'
import { AgentStateError, createRecordBackend } from '@agent-state/core'
import {
  createMemoryBackend,
  createMemoryRecordMap,
  createMemoryRecordStore,
  createMemoryStore,
} from '@agent-state/memory'
import { expect, it } from 'vitest'
import { describeBackendContract, lastSummaries } from '../src/index.js'
import { checkFilter } from '../src/knobs.js'

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
    // No watchInterrupt option: the uncached run reads the store's declaration from the
    // instance (core carries the store's WATCH_INTERRUPT seam over), as `verify` does.
  })
}

// Declared after the suites, so their summaries are recorded: the uncached run offers destroy
// and an interrupt declaration through core, so neither check may be skipped there (a Backend
// that lost them would pass every check that only runs when they are present).
const DESTROY_CHECK = 'basic/destroy-removes-every-value-and-lease-of-the-namespace'
const INTERRUPT_CHECK =
  'change-notification/an-interrupted-watch-resyncs-and-misses-no-write-made-meanwhile'
it.skipIf(checkFilter() !== undefined)(
  'core gives the memory-records Backend the store destroy and interrupt declaration',
  () => {
    const summary = lastSummaries.get('memory-records')
    if (summary === undefined) throw new Error('the memory-records suite recorded no summary')
    const byId = new Map(summary.checks.map((c) => [c.id, c]))
    expect(byId.get(DESTROY_CHECK)?.status).toBe('passed')
    expect(byId.get(INTERRUPT_CHECK)).toMatchObject({
      status: 'skipped',
      reason: `not applicable: ${MEMORY_IN_PROCESS}`,
    })
    // The cached run's minimal store has neither: both skipped by name, never passed.
    const minimal = new Map(
      lastSummaries.get('memory-records-cached')?.checks.map((c) => [c.id, c]),
    )
    expect(minimal.get(DESTROY_CHECK)).toMatchObject({
      status: 'skipped',
      skipCause: 'not-applicable',
    })
  },
)
