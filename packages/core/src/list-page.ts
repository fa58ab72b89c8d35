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
 * Builds one listing page from an ordered scan, applying the limit, the
 * delimiter and the opaque cursor the same way for every backend. A page that
 * fills up carries a cursor even when the next page turns out empty: the
 * contract says a cursor means "more may follow".
 */
export async function collectListPage(
  options: NormalizedListOptions,
  scan: ScanFunction,
): Promise<ListPage> {
  const { prefix, limit, delimiter } = options
  const entries: ListEntry[] = []
  const prefixes: string[] = []
  /** Where the page stands: the last key or group returned (or the incoming cursor). */
  let emitted = options.position
  /** Where the next scan starts; ahead of `emitted` when the scan skipped keys. */
  let scanFrom = options.position
  let count = 0
  for (;;) {
    const batch = await scan(scanFrom, Math.min(limit - count + 1, MAX_BATCH))
    for (const entry of batch.entries) {
      if (emitted?.group === true && entry.key.startsWith(emitted.after)) continue
      if (emitted !== undefined && compareUtf8(entry.key, emitted.after) <= 0) continue
      if (!entry.key.startsWith(prefix)) continue
      if (count === limit) return finish(entries, prefixes, delimiter, emitted)
      const cut = delimiter === undefined ? -1 : entry.key.indexOf(delimiter, prefix.length)
      if (cut >= 0) {
        const group = entry.key.slice(0, cut + 1)
        prefixes.push(group)
        emitted = { after: group, group: true }
      } else {
        entries.push(entry)
        emitted = { after: entry.key, group: false }
      }
      count++
    }
    if (batch.done) return finish(entries, prefixes, delimiter, undefined)
    if (count === limit) return finish(entries, prefixes, delimiter, emitted)
    scanFrom = emitted
    if (
      batch.examinedUpTo !== undefined &&
      (scanFrom === undefined || compareUtf8(batch.examinedUpTo, scanFrom.after) > 0)
    ) {
      scanFrom = { after: batch.examinedUpTo, group: false }
    }
  }
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
