import {
  MAX_KEY_BYTES,
  type RecordCondition,
  type RecordScanOptions,
  type RecordStore,
  type ScannedRecord,
  type VersionedRecord,
} from '@agent-state/core'
import { createFsWatcher, FS_CHANGE_NOTIFICATION, type FsWatcher } from './change-notification.js'
import { fsError } from './errors.js'
import { fileNameOf, pathIn } from './key-layout.js'
import { type FsLayout, namespaceDirs } from './namespace-dirs.js'
import type { ResolvedFsOptions } from './options.js'
import { type CheckedScan, createRecordListing } from './record-listing.js'
import { readRecordFile } from './record-reading.js'
import { createWritePath, type WriteHooks } from './write-path.js'

/** The filesystem {@link RecordStore}, plus what the fs backend's own `list` needs. */
export interface FsRecordStore extends RecordStore {
  /** Where the namespace lives. */
  readonly layout: FsLayout
  /** A scan page that reports damaged records instead of failing on them. */
  scanChecked(options: RecordScanOptions): CheckedScan
  /** The change-notification watches (its `interrupt` is the contract suite's test seam). */
  readonly watcher: FsWatcher
}

/**
 * The filesystem {@link RecordStore}: one record file per key, replaced by a
 * complete temp file renamed over it, under a commit slot (`commit-slot.ts`)
 * that makes the version check and the rename one atomic step across
 * processes, and that a writer frozen at any point can never keep. Reads take
 * no lock: `rename` swaps whole files.
 *
 * `hooks` is a test seam (stopping a writer at an exact step); leave it out.
 */
export function createFsRecordStore(
  root: string,
  options: ResolvedFsOptions,
  hooks?: WriteHooks,
): FsRecordStore {
  const dirs = namespaceDirs(root, options.namespace, options)
  const { recordsDir } = dirs.layout
  const listing = createRecordListing(dirs, options)
  let closed = false
  const writes = createWritePath(dirs, options, () => closed, hooks)
  // The directory may have gone (another instance's destroy): check afresh before each watch.
  const watcher = createFsWatcher(recordsDir, () => {
    dirs.invalidate()
    dirs.ensureReady()
  })

  return {
    name: 'fs',
    capabilities: {
      durable: options.fsync,
      multiProcess: true,
      multiHost: false,
      maxKeyBytes: MAX_KEY_BYTES,
      maxValueBytes: options.maxValueBytes,
      changeNotification: FS_CHANGE_NOTIFICATION,
    },
    layout: dirs.layout,
    watcher,
    watch: (prefix, watchOptions) => watcher.watch(prefix, watchOptions),

    async read(key: string): Promise<VersionedRecord | null> {
      dirs.ensureReady()
      const path = pathIn(recordsDir, fileNameOf(key))
      try {
        // A RecordFile is a VersionedRecord (its key too): no second object.
        return readRecordFile(path, key)
      } catch (error) {
        throw fsError(
          error,
          { operation: 'read a record', mayHaveApplied: false },
          { key, file: path },
        )
      }
    },

    write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string> {
      return writes.write(key, data, condition)
    },

    // Versions are a per-process random prefix and a counter, so a record
    // created after a removal never repeats an earlier version.
    remove(key: string, condition: { readonly version: string }): Promise<void> {
      return writes.remove(key, condition)
    },

    async scan(
      scan: RecordScanOptions,
    ): Promise<{ records: readonly ScannedRecord[]; done: boolean }> {
      return listing.scan(scan)
    },

    scanChecked(scan: RecordScanOptions): CheckedScan {
      return listing.scanChecked(scan)
    },

    async destroy(): Promise<void> {
      dirs.destroy()
      listing.clear()
    },

    async close(): Promise<void> {
      closed = true
      watcher.close()
      writes.close()
    },
  }
}
