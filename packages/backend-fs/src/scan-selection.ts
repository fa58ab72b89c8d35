import { compareUtf8 } from '@agent-state/core'
import { classifyName, fileNameOf } from './key-paths.js'

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
  /** Whether temp files were seen (worth a sweep). */
  readonly temps: boolean
}

const hex = (text: string): string => Buffer.from(text, 'utf8').toString('hex')

/**
 * Picks a scan page from the records directory's entries. Hex file names
 * sort as their keys' bytes (two lower-case hex digits a byte), so filtering
 * and sorting work on the names and only the picked ones are decoded; a
 * hashed name sorts by the hex of its key, learnt through `keyOfHashed`.
 */
export function selectRecords(
  names: readonly string[],
  options: { readonly prefix: string; readonly after?: string | undefined; readonly limit: number },
  keyOfHashed: (name: string) => string | undefined,
): ScanSelection {
  const { prefix, after, limit } = options
  // Keys never hold lone surrogates: an ill-formed prefix matches nothing.
  const hexPrefix = prefix.isWellFormed() ? hex(prefix) : undefined
  const hexAfter = after?.isWellFormed() ? hex(after) : undefined
  const candidates: { sort: string; name: string; key?: string }[] = []
  let temps = false
  for (const name of names) {
    const kind = classifyName(name)
    let sort: string
    let key: string | undefined
    if (kind.kind === 'hex') {
      sort = name
    } else if (kind.kind === 'hashed') {
      key = keyOfHashed(name)
      if (key === undefined) continue
      sort = hex(key)
    } else {
      temps ||= kind.kind === 'temp'
      continue
    }
    if (hexPrefix === undefined || !sort.startsWith(hexPrefix)) continue
    if (hexAfter !== undefined && sort <= hexAfter) continue
    if (after !== undefined && hexAfter === undefined) {
      key ??= Buffer.from(name, 'hex').toString('utf8')
      if (compareUtf8(key, after) <= 0) continue
    }
    candidates.push(key === undefined ? { sort, name } : { sort, name, key })
  }
  candidates.sort((a, b) => (a.sort < b.sort ? -1 : a.sort > b.sort ? 1 : 0))
  const picked: PickedRecord[] = []
  let index = 0
  for (; index < candidates.length && picked.length < limit; index++) {
    const candidate = candidates[index] as (typeof candidates)[number]
    const key = candidate.key ?? Buffer.from(candidate.name, 'hex').toString('utf8')
    // A hex name that is not valid UTF-8 is not a record of ours: skip it.
    if (candidate.key === undefined && fileNameOf(key) !== candidate.name) continue
    picked.push({ key, name: candidate.name })
  }
  return { picked, done: index >= candidates.length, temps }
}
