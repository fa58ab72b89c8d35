import { compareUtf8 } from '@agent-state/core'
import { fileNameOf } from './key-layout.js'
import type { IndexedName } from './record-name-index.js'

/** A record file chosen for a scan page. */
export interface PickedRecord {
  readonly key: string
  readonly name: string
}

/** The outcome of {@link selectRecords}. */
export interface ScanSelection {
  /** At most `limit` records, in ascending UTF-8 byte order of their keys. */
  readonly picked: readonly PickedRecord[]
  /** Whether no further matching record exists in the listing. */
  readonly done: boolean
}

const hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex')

/** The first index in `entries[from..]` whose sort string passes `test` (monotone: false…false, true…true). */
function firstIndex(
  entries: readonly IndexedName[],
  from: number,
  test: (sort: string) => boolean,
): number {
  let low = from
  let high = entries.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (test((entries[middle] as IndexedName).sort)) high = middle
    else low = middle + 1
  }
  return low
}

const keyOf = (entry: IndexedName): string =>
  entry.key ?? Buffer.from(entry.name, 'hex').toString('utf8')

/**
 * Picks a scan page from the records directory's names in listing order
 * (see `sortNames`): hex sort strings order as their keys' UTF-8 bytes, so a
 * prefix is one contiguous run found by binary search, and only the picked
 * names are decoded. Costs O(log N + page), not O(N).
 */
export function selectRecords(
  entries: readonly IndexedName[],
  options: { readonly prefix: string; readonly after?: string | undefined; readonly limit: number },
): ScanSelection {
  const { prefix, after, limit } = options
  // Keys never hold lone surrogates: an ill-formed prefix matches nothing.
  if (!prefix.isWellFormed()) return { picked: [], done: true }
  const hexPrefix = hex(prefix)
  let index = firstIndex(entries, 0, (sort) => sort >= hexPrefix)
  // An ill-formed `after` (only from a forged cursor) is compared key by key below.
  const hexAfter = after?.isWellFormed() ? hex(after) : undefined
  if (hexAfter !== undefined) index = firstIndex(entries, index, (sort) => sort > hexAfter)
  const picked: PickedRecord[] = []
  for (; index < entries.length && picked.length < limit; index++) {
    const entry = entries[index] as IndexedName
    if (!entry.sort.startsWith(hexPrefix)) return { picked, done: true }
    const key = keyOf(entry)
    // A hex name that is not valid UTF-8 is not a record of ours: skip it.
    if (entry.key === undefined && fileNameOf(key) !== entry.name) continue
    if (after !== undefined && hexAfter === undefined && compareUtf8(key, after) <= 0) continue
    picked.push({ key, name: entry.name })
  }
  const next = entries[index]
  return { picked, done: next === undefined || !next.sort.startsWith(hexPrefix) }
}
