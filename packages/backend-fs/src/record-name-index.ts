import type { BigIntStats } from 'node:fs'
import type { AgentStateError } from '@agent-state/core'
import { classifyName } from './key-layout.js'

/**
 * The records directory's file names in listing order, kept between listing
 * pages so that a page costs a `stat` of the directory and a binary search
 * instead of a `readdir` and a sort of the whole namespace.
 *
 * Why a cached listing stays correct across processes: every change to the
 * set of names in `records/` (a new key's rename, a temp file, a sweep, a
 * `destroy`) updates the directory's mtime and ctime, whichever process makes
 * it. The cache is reused only while the directory's identity and timestamps
 * are exactly those seen when the names were read.
 *
 * The catch is timestamp granularity (git's "racy index" problem): a
 * filesystem stamps changes from a coarse clock (a kernel tick, up to 10 ms
 * on Linux, or whole seconds on ext3, HFS+ and FAT), so a change made in the
 * same tick as the last one, after the names were read, can leave the
 * timestamps unchanged. So the clock is read BEFORE the directory is stat'ed
 * and read, and the names are trusted for later pages only when the
 * directory's mtime and ctime are older than that moment by more than the
 * timestamp granularity ({@link racyMarginNs}). Any later change is then
 * stamped at or after that moment minus one tick, strictly newer than the
 * stamps kept, and is noticed. A listing made within the margin of the last
 * change is still fresh for its own page (it was just read), it is simply not
 * reused; the next page reads the directory again.
 *
 * What this cannot see: a wall clock stepped backwards by more than the
 * margin between two changes, or a filesystem whose timestamps come from
 * another host's clock (NFS, SMB: not supported, and `listCache: false`
 * turns the cache off).
 */

/** One record file of the records directory. */
export interface IndexedName {
  /** The lower-case hex of the key's UTF-8 bytes: sorts like the key. */
  readonly sort: string
  /** The file name. */
  readonly name: string
  /** The key, when it had to be read from the file (hashed names). */
  readonly key?: string
}

/** A hashed-name record file whose key cannot be read (its envelope is damaged). */
export interface UnreadableName {
  /** The file name. */
  readonly name: string
  /** The `CORRUPT` or `INCOMPATIBLE_SCHEMA` error reading it gave. */
  readonly problem: AgentStateError
}

/** The sorted names of the records directory and whether temp files were seen. */
export interface NameListing {
  readonly entries: readonly IndexedName[]
  readonly temps: boolean
  /** Hashed-name files whose key could not be read: they have no place in key order. */
  readonly unreadable?: readonly UnreadableName[]
}

/** The directory state a cached listing was read in. */
export interface DirectoryStamp {
  readonly dev: bigint
  readonly ino: bigint
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
  readonly size: bigint
}

const SECOND_NS = 1_000_000_000n
/** Margin for filesystems with sub-second timestamps: 10× the coarsest Linux tick (10 ms). */
const FINE_MARGIN_NS = 100_000_000n
/** Margin for filesystems stamping whole seconds (ext3, HFS+) or two (FAT). */
const COARSE_MARGIN_NS = 3n * SECOND_NS

/**
 * How far a directory's timestamps must lie before the moment its names were
 * read for that listing to be reused. A timestamp with a sub-second part
 * shows a fine-grained filesystem; whole seconds may mean 1 or 2 s stamps.
 */
export function racyMarginNs(stat: DirectoryStamp): bigint {
  const fine = stat.mtimeNs % SECOND_NS !== 0n || stat.ctimeNs % SECOND_NS !== 0n
  return fine ? FINE_MARGIN_NS : COARSE_MARGIN_NS
}

/** The parts of a directory's stat that any change of its entries alters. */
export function stampOf(stat: BigIntStats): DirectoryStamp {
  return {
    dev: stat.dev,
    ino: stat.ino,
    mtimeNs: stat.mtimeNs,
    ctimeNs: stat.ctimeNs,
    size: stat.size,
  }
}

function sameStamp(a: DirectoryStamp, b: DirectoryStamp): boolean {
  return (
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.mtimeNs === b.mtimeNs &&
    a.ctimeNs === b.ctimeNs &&
    a.size === b.size
  )
}

const hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex')

/**
 * Sorts a `readdir` result into listing order: hex names sort as themselves,
 * hashed names by the hex of the key stored inside (`keyOfHashed`, `undefined`
 * when the file vanished), temp and foreign names are left out.
 *
 * `previous` (the last listing) lets an unchanged set of names, the usual
 * case after overwrites, skip the sort.
 */
export function sortNames(
  names: readonly string[],
  keyOfHashed: (name: string) => string | undefined,
  previous?: NameListing,
): NameListing {
  const entries: IndexedName[] = []
  let temps = false
  for (const name of names) {
    const kind = classifyName(name)
    if (kind.kind === 'hex') {
      entries.push({ sort: name, name })
    } else if (kind.kind === 'hashed') {
      const key = keyOfHashed(name)
      if (key !== undefined) entries.push({ sort: hex(key), name, key })
    } else {
      temps ||= kind.kind === 'temp'
    }
  }
  if (previous !== undefined && previous.entries.length === entries.length) {
    const known = new Set<string>()
    for (const entry of previous.entries) known.add(entry.name)
    if (entries.every((entry) => known.has(entry.name))) return { entries: previous.entries, temps }
  }
  entries.sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0))
  return { entries, temps }
}

/** A listing and the directory state it was read in; reused only while that state provably holds. */
export class NameListingCache {
  #listing: NameListing | undefined
  #stamp: DirectoryStamp | undefined
  #trusted = false

  /** The cached listing, if the directory still has exactly the stamp it was read under and that stamp was settled. */
  lookup(current: DirectoryStamp): NameListing | undefined {
    if (this.#listing === undefined || this.#stamp === undefined || !this.#trusted) return undefined
    return sameStamp(this.#stamp, current) ? this.#listing : undefined
  }

  /** The last listing read, trusted or not (a base for {@link sortNames}). */
  last(): NameListing | undefined {
    return this.#listing
  }

  /**
   * Keeps a listing read after `stamp` was taken, itself taken after the wall
   * clock read `readStartNs`. It is trusted for later pages only when both
   * timestamps precede `readStartNs` by more than the racy margin.
   */
  store(listing: NameListing, stamp: DirectoryStamp, readStartNs: bigint): void {
    const settledBefore = readStartNs - racyMarginNs(stamp)
    this.#listing = listing
    this.#stamp = stamp
    this.#trusted = stamp.mtimeNs < settledBefore && stamp.ctimeNs < settledBefore
  }

  /** Forgets everything (after `destroy`, or when the directory is gone). */
  clear(): void {
    this.#listing = undefined
    this.#stamp = undefined
    this.#trusted = false
  }
}
