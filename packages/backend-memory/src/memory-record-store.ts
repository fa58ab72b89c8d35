import {
  DEFAULT_MAX_VALUE_BYTES,
  MAX_KEY_BYTES,
  type RecordStore,
  recordChanged,
  type ScannedRecord,
  setWatchInterrupt,
} from '@agent-state/core'
import {
  announceAllRecords,
  announceRecord,
  MEMORY_CHANGE_NOTIFICATION,
  MEMORY_IN_PROCESS,
  watchRecords,
} from './change-notification.js'
import { indexAfter } from './memory-store.js'

/** Options of {@link createMemoryRecordStore}. */
export interface MemoryRecordStoreOptions {
  /** Records shared between stores created with the same map, to race them. */
  readonly records?: MemoryRecordMap
  /**
   * Declare `versionChangesWithBytes` (true here: only this store's writes
   * change a record, and each bumps the version), so that the contract suite
   * also covers `createRecordBackend`'s put-from-cache path. Default: false.
   */
  readonly versionChangesWithBytes?: boolean
}

/** The shared storage of memory record stores: key to record bytes and version. */
export interface MemoryRecordMap {
  readonly data: Map<string, { data: Uint8Array; version: string }>
  readonly sortedKeys: string[]
  counter: number
}

/** Creates an empty {@link MemoryRecordMap}. */
export function createMemoryRecordMap(): MemoryRecordMap {
  return { data: new Map(), sortedKeys: [], counter: 0 }
}

/**
 * The smallest possible {@link RecordStore}, in memory. It exists to run the
 * contract suite over `createRecordBackend` (the path third parties take) and
 * as a worked example of the primitive, including the optional conditional
 * `remove` (so deletes of never-leased keys leave no tombstone here) and the
 * optional `watch` (change notification through `createRecordBackend`).
 */
export function createMemoryRecordStore(options: MemoryRecordStoreOptions = {}): RecordStore {
  const records = options.records ?? createMemoryRecordMap()
  // The same declaration as the memory backend's: hints are handed over inside the write, so the
  // interrupted-watch check has no channel to cut (createRecordBackend carries it over).
  return setWatchInterrupt<RecordStore>(
    {
      name: 'memory-records',
      capabilities: {
        durable: false,
        multiProcess: false,
        multiHost: false,
        maxKeyBytes: MAX_KEY_BYTES,
        maxValueBytes: DEFAULT_MAX_VALUE_BYTES,
        changeNotification: MEMORY_CHANGE_NOTIFICATION,
      },
      versionChangesWithBytes: options.versionChangesWithBytes === true,
      async read(key) {
        const found = records.data.get(key)
        // The caller's own copy: what it does with the bytes must not reach the stored record.
        return found === undefined ? null : { data: found.data.slice(), version: found.version }
      },
      async write(key, data, condition) {
        const current = records.data.get(key)
        const holds =
          'absent' in condition ? current === undefined : current?.version === condition.version
        if (!holds) throw recordChanged(key)
        const version = String(++records.counter)
        if (current === undefined)
          records.sortedKeys.splice(indexAfter(records.sortedKeys, key), 0, key)
        // A copy, not `data.slice()`: a Buffer's `slice` is a view of the caller's memory.
        records.data.set(key, { data: new Uint8Array(data), version })
        announceRecord(records, key)
        return version
      },
      // Versions come from one counter that a removal does not reset, so a
      // re-created record never repeats an earlier version.
      async remove(key, condition) {
        if (records.data.get(key)?.version !== condition.version) throw recordChanged(key)
        records.data.delete(key)
        records.sortedKeys.splice(indexAfter(records.sortedKeys, key, true), 1)
        announceRecord(records, key)
      },
      async scan({ prefix, after, limit }) {
        let index = indexAfter(records.sortedKeys, prefix, true)
        if (after !== undefined) index = Math.max(index, indexAfter(records.sortedKeys, after))
        const out: ScannedRecord[] = []
        for (; index < records.sortedKeys.length && out.length < limit; index++) {
          const key = records.sortedKeys[index] as string
          if (!key.startsWith(prefix)) return { records: out, done: true }
          out.push({ key, data: (records.data.get(key) as { data: Uint8Array }).data.slice() })
        }
        const next = records.sortedKeys[index]
        return { records: out, done: next === undefined || !next.startsWith(prefix) }
      },
      async destroy() {
        records.data.clear()
        records.sortedKeys.length = 0
        announceAllRecords(records)
      },
      watch: (prefix, watchOptions) => watchRecords(records, prefix, watchOptions),
      async close() {},
    },
    MEMORY_IN_PROCESS,
  )
}
