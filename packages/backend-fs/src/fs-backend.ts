import { resolve } from 'node:path'
import { createRecordBackend, parseBackendOptions, setWatchInterrupt } from '@agent-state/core'
import { type FsBackend, withDamageReporting } from './damage-reporting.js'
import { createFsRecordStore } from './fs-record-store.js'
import { type FsBackendOptions, fsOptionsSchema } from './options.js'
import type { WriteHooks } from './write-path.js'

/**
 * Creates the filesystem backend: durable (with `fsync`, the default),
 * multi-process on one host, leases on the `host` clock.
 *
 * It is core's `createRecordBackend` over a filesystem `RecordStore` (one
 * record file per key holding value, writer, lease and fencing counter), so
 * a lease check and the write it guards are one atomic step. Its listings
 * report damaged records instead of failing on them (see `FsListPage`).
 *
 * @example
 * ```ts
 * const backend = createFsBackend({ root: './.agent-state', namespace: 'my-agent' })
 * await backend.put('notes/today', new TextEncoder().encode('hello'))
 * ```
 * @throws `INVALID_ARGUMENT` for invalid or unknown options (`context: { backend, field, issues }`).
 */
export function createFsBackend(options: FsBackendOptions): FsBackend {
  return createFsBackendWithHooks(options)
}

/**
 * {@link createFsBackend} with the write path's test seam (`hooks`): for the
 * contract suite's frozen-writer tier (the package's suite and
 * `agent-state verify` stop a holder at each of `FS_WRITE_STEPS`).
 * Never needed in production.
 */
export function createFsBackendWithHooks(options: FsBackendOptions, hooks?: WriteHooks): FsBackend {
  const resolved = parseBackendOptions(fsOptionsSchema, options, 'fs')
  const store = createFsRecordStore(resolve(resolved.root), resolved, hooks)
  const backend = createRecordBackend(
    store,
    resolved.clock === undefined ? {} : { clock: resolved.clock },
  )
  // The contract suite's resync check (and `agent-state verify`) breaks the directory watch
  // through this seam, as an inotify overflow would.
  return setWatchInterrupt(withDamageReporting(backend, store), async () => {
    store.watcher.interrupt()
  })
}
