import type { NormalizedListOptions } from './arguments.js'
import type { ListEntry, ListPage } from './backend.js'
import { compareUtf8 } from './byte-order.js'
import { type CursorPosition, encodeCursor } from './cursor.js'

/**
 * One batch from a backend's ordered scan: entries whose keys start with the
 * listing prefix, in ascending UTF-8 byte order, all after the position asked
 * for. `done` says that nothing follows the batch.
 */
export interface ScanBatch {
  readonly entries: readonly ListEntry[]
  readonly done: boolean
  /**
   * The last key the scan examined, when it passed over keys it did not
   * return (deleted keys, internal records). Lets the next scan start after
   * them instead of reading them again.
   */
  readonly examinedUpTo?: string
}

/**
 * Reads the next batch: entries strictly after `position` (all of a delimiter
 * group skipped when `position.group`), or from the start of the prefix when
 * `position` is undefined. `max` is a hint; returning keys that belong to a
 * skipped group is fine, the caller filters them.
 */
export type ScanFunction = (position: CursorPosition | undefined, max: number) => Promise<ScanBatch>

/** The largest batch requested from a scan at once. */
const MAX_BATCH = 1000

/**
 * The first batch {@link ListBatching.groupedFirstBatch} suggests: what a group
 * that fills it costs a listing with a delimiter before its scan skips the
 * rest of the group.
 */
export const GROUPED_FIRST_BATCH = 64

/** How {@link collectListPage} sizes the batches it asks its scan for. */
export interface ListBatching {
  /**
   * With a delimiter: the first batch. A batch whose last key was folded into
   * a group keeps this size (the next scan starts after that group, so a big
   * group costs one such batch instead of up to 1000 keys read to list one
   * prefix); a batch that ended outside a group makes the next one four times
   * larger, up to 1000, so many plain entries still take few scans. For
   * scans whose cost grows with the keys they return (a database's rows sent
   * and parsed). Absent, or without a delimiter: each batch is what the page
   * still needs, up to 1000.
   */
  readonly groupedFirstBatch?: number
}

/**
 * Builds one listing page from an ordered scan, applying the limit, the
 * delimiter and the opaque cursor the same way for every backend. A page that
 * fills up carries a cursor even when the next page turns out empty: the
 * contract says a cursor means "more may follow".
 */
export async function collectListPage(
  options: NormalizedListOptions,
  scan: ScanFunction,
  batching: ListBatching = {},
): Promise<ListPage> {
  const { prefix, limit, delimiter } = options
  let batchSize = delimiter === undefined ? MAX_BATCH : (batching.groupedFirstBatch ?? MAX_BATCH)
  const entries: ListEntry[] = []
  const prefixes: string[] = []
  // Where the page stands: the last key or group returned (or the incoming
  // cursor). Two locals rather than a position object per entry.
  let emittedAfter = options.position?.after
  let emittedGroup = options.position?.group === true
  /** Where the next scan starts; ahead of the emitted position when the scan skipped keys. */
  let scanFrom = options.position
  let count = 0
  for (;;) {
    const batch = await scan(scanFrom, Math.min(limit - count + 1, batchSize))
    for (const entry of batch.entries) {
      const key = entry.key
      if (emittedAfter !== undefined) {
        if (emittedGroup && hasPrefix(key, emittedAfter)) continue
        // Drops what a scan that breaks its contract repeats or returns out of
        // order, so a page is always ascending and after its cursor.
        if (!isAfter(key, emittedAfter)) continue
      }
      if (!hasPrefix(key, prefix)) continue
      if (count === limit)
        return finish(entries, prefixes, delimiter, positionOf(emittedAfter, emittedGroup))
      const cut = delimiter === undefined ? -1 : key.indexOf(delimiter, prefix.length)
      if (cut >= 0) {
        const group = key.slice(0, cut + 1)
        prefixes.push(group)
        emittedAfter = group
        emittedGroup = true
      } else {
        entries.push(entry)
        emittedAfter = key
        emittedGroup = false
      }
      count++
    }
    if (batch.done) return finish(entries, prefixes, delimiter, undefined)
    if (count === limit)
      return finish(entries, prefixes, delimiter, positionOf(emittedAfter, emittedGroup))
    if (!emittedGroup) batchSize = Math.min(batchSize * 4, MAX_BATCH)
    scanFrom = positionOf(emittedAfter, emittedGroup)
    if (
      batch.examinedUpTo !== undefined &&
      (scanFrom === undefined || isAfter(batch.examinedUpTo, scanFrom.after))
    ) {
      scanFrom = { after: batch.examinedUpTo, group: false }
    }
  }
}

/**
 * `text.startsWith(prefix)`, written as a backward search from index 0: it
 * runs for every listed entry, and in Node 20's V8 this form takes about half
 * the time of `startsWith` (26 against 62 ns for a 30-character prefix).
 */
function hasPrefix(text: string, prefix: string): boolean {
  return text.lastIndexOf(prefix, 0) === 0
}

function positionOf(after: string | undefined, group: boolean): CursorPosition | undefined {
  return after === undefined ? undefined : { after, group }
}

/** Whether `key` sorts strictly after `bound` in UTF-8 byte order. */
function isAfter(key: string, bound: string): boolean {
  return compareUtf8(key, bound) > 0
}

function finish(
  entries: ListEntry[],
  prefixes: string[],
  delimiter: string | undefined,
  next: CursorPosition | undefined,
): ListPage {
  const page: { entries: ListEntry[]; prefixes?: string[]; cursor?: string } = { entries }
  if (delimiter !== undefined) page.prefixes = prefixes
  if (next !== undefined) page.cursor = encodeCursor(next)
  return page
}
