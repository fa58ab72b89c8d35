import { lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import {
  AgentStateError,
  isAgentStateError,
  type RecordScanOptions,
  type ScannedRecord,
} from '@agent-state/core'
import { errnoOf, fsError } from './errors.js'
import { fileNameOf } from './key-layout.js'
import { type NamespaceDirs, notADirectory } from './namespace-dirs.js'
import type { ResolvedFsOptions } from './options.js'
import {
  type NameListing,
  NameListingCache,
  sortNames,
  stampOf,
  type UnreadableName,
} from './record-name-index.js'
import { readRecordFile } from './record-reading.js'
import { selectRecords } from './scan-selection.js'

/** One record of a checked scan: its bytes, or why they cannot be read. */
export type ScannedItem =
  | { readonly key: string; readonly file: string; readonly data: Uint8Array }
  | { readonly key: string; readonly file: string; readonly problem: AgentStateError }

/** A record file whose key is unknown because its envelope is damaged. */
export interface UnreadableRecord {
  /** Absolute path of the file. */
  readonly file: string
  readonly problem: AgentStateError
}

/** A scan page that reports damaged records instead of failing on them. */
export interface CheckedScan {
  readonly items: readonly ScannedItem[]
  readonly done: boolean
  /** Damaged files whose key is unknown, anywhere in the namespace (not only this page). */
  readonly unreadable: readonly UnreadableRecord[]
}

/** Damage a listing reports and steps over; anything else (I/O, permissions) fails it. */
export function isDamage(error: unknown): error is AgentStateError {
  return isAgentStateError(error, 'CORRUPT') || isAgentStateError(error, 'INCOMPATIBLE_SCHEMA')
}

/** The listing side of one store instance: sorted record names and scan pages. */
export interface RecordListing {
  /** A scan page for core's `createRecordBackend`: damage fails it (`CORRUPT`, with the file). */
  scan(options: RecordScanOptions): { records: readonly ScannedRecord[]; done: boolean }
  /** A scan page that reports damage per record (the fs backend's `list`). */
  scanChecked(options: RecordScanOptions): CheckedScan
  /** Forgets cached names (after `destroy`). */
  clear(): void
}

/** Builds the listing side over the namespace's `records/` directory. */
export function createRecordListing(
  dirs: NamespaceDirs,
  options: ResolvedFsOptions,
): RecordListing {
  const { recordsDir } = dirs.layout
  /** Hashed file name to key, learnt while listing; names never change keys. */
  const hashedKeys = new Map<string, string>()
  /** The records directory's sorted names, reused between pages while provably current. */
  const listings = new NameListingCache()

  /** The key stored in a hashed-name record file (cached: a name never changes keys). */
  function keyOfHashed(name: string): string | undefined {
    const known = hashedKeys.get(name)
    if (known !== undefined) return known
    const path = join(recordsDir, name)
    const file = readRecordFile(path, undefined)
    if (file === null) return undefined
    if (fileNameOf(file.key) !== name) {
      throw new AgentStateError('CORRUPT', `Record file ${path} holds a key of another name`, {
        context: { file: path },
      })
    }
    hashedKeys.set(name, file.key)
    return file.key
  }

  /**
   * The records directory's names in listing order: the cached listing when
   * the directory provably did not change since it was read (see
   * `record-name-index.ts`), otherwise a fresh `readdir`.
   */
  function currentNames(): NameListing {
    // The clock is read before the stat and the readdir: see NameListingCache.store.
    const readStartNs = BigInt(Date.now()) * 1_000_000n
    let names: string[]
    let listing: NameListing
    try {
      const stat = lstatSync(recordsDir, { bigint: true, throwIfNoEntry: false })
      if (stat === undefined) {
        // Destroyed by another instance: an empty namespace until a write recreates it.
        listings.clear()
        return { entries: [], temps: false }
      }
      if (!stat.isDirectory()) throw notADirectory(recordsDir)
      const stamp = stampOf(stat)
      const cached = options.listCache ? listings.lookup(stamp) : undefined
      if (cached !== undefined) return cached
      names = readdirSync(recordsDir)
      const unreadable: UnreadableName[] = []
      const keyOf = (name: string): string | undefined => {
        try {
          return keyOfHashed(name)
        } catch (error) {
          if (!isDamage(error)) throw error
          unreadable.push({ name, problem: error })
          return undefined
        }
      }
      const sorted = sortNames(names, keyOf, listings.last())
      listing = unreadable.length === 0 ? sorted : { ...sorted, unreadable }
      if (options.listCache) listings.store(listing, stamp, readStartNs)
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') {
        listings.clear()
        return { entries: [], temps: false }
      }
      throw fsError(
        error,
        { operation: 'list records', mayHaveApplied: false },
        { path: recordsDir },
      )
    }
    if (listing.temps) dirs.sweepTemps(names)
    return listing
  }

  function scanChecked(scan: RecordScanOptions): CheckedScan {
    dirs.ensureReady()
    const names = currentNames()
    const selection = selectRecords(names.entries, scan)
    const items: ScannedItem[] = []
    for (const { key, name } of selection.picked) {
      const file = join(recordsDir, name)
      try {
        const record = readRecordFile(file, key)
        if (record !== null) items.push({ key, file, data: record.data })
      } catch (error) {
        if (!isDamage(error))
          throw fsError(error, { operation: 'read a record', mayHaveApplied: false }, { key, file })
        items.push({ key, file, problem: error })
      }
    }
    const unreadable = (names.unreadable ?? []).map(({ name, problem }) => ({
      file: join(recordsDir, name),
      problem,
    }))
    return { items, done: selection.done, unreadable }
  }

  return {
    scan(scan: RecordScanOptions): { records: readonly ScannedRecord[]; done: boolean } {
      const checked = scanChecked(scan)
      const damaged = checked.unreadable[0]
      if (damaged !== undefined) throw damaged.problem
      const records: ScannedRecord[] = []
      for (const item of checked.items) {
        if ('problem' in item) throw item.problem
        records.push({ key: item.key, data: item.data })
      }
      return { records, done: checked.done }
    },
    scanChecked,
    clear(): void {
      hashedKeys.clear()
      listings.clear()
    },
  }
}
