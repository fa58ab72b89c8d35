import type { StoredValue } from '@agent-state/core'
import { spreadDistinct } from '@agent-state/core'
import { META_CHECK_CELLS } from './row-checks.js'
import {
  decodeValueRow,
  META_COLUMNS,
  missingFromPrimaryIndex,
  type RawRow,
  UNVERIFIED,
} from './row-codec.js'
import { ENTRIES_TABLE, LIVE_INDEX } from './schema.js'

/** Where a row of {@link getManySql} has the position of its key in the keys asked (after `get`'s cells). */
const POSITION_CELL = META_CHECK_CELLS + 2

/** Where a row of {@link getManySql} has its listing-index check (see there). */
const LISTED_CELL = POSITION_CELL + 1

/**
 * The native `getMany`'s ONE statement, binding the distinct keys as one JSON
 * array, then the namespace twice (`json_each`: one statement text and one
 * prepared statement for 1 to 1000 keys, where an `IN (?, ?, …)` list needs a
 * statement per size or padding; see benchmarks/FINDINGS.md for the
 * measured choice). Keys are valid keys: no control characters and no
 * backslash, so their JSON text is the key between quotes.
 *
 * One row per key asked, in no promised order: `get`'s cells (`META_COLUMNS`,
 * then `value`) of the key's row through the primary key, the key's position
 * in the array, and, for a key the primary key does not find, whether the
 * listing index has it live (`get`'s miss check, `absent()` in
 * `sqlite-backend.ts`): 1 means the primary index lost a stored key
 * (`CORRUPT`), 0 a true miss, `NULL` a row found. One statement is one read
 * snapshot in WAL mode, so both b-trees are asked of the same state.
 */
export function getManySql(): string {
  return `WITH asked(position, k) AS (SELECT key, value FROM json_each(?))
    SELECT ${META_COLUMNS}, value, asked.position,
      CASE WHEN entries.rowid IS NULL THEN EXISTS (
        SELECT 1 FROM ${ENTRIES_TABLE} INDEXED BY ${LIVE_INDEX}
        WHERE namespace = ? AND version IS NOT NULL AND key = asked.k) END
    FROM asked LEFT JOIN ${ENTRIES_TABLE} AS entries
      ON entries.namespace = ? AND entries.key = asked.k`
}

/** What the native `getMany` needs of the backend it is wired into. */
export interface GetManyDeps {
  readonly namespace: string
  /** Runs {@link getManySql} for the distinct keys as a JSON array (`statements.ts`). */
  readonly readMany: (keysJson: string) => RawRow[]
  /**
   * `get`'s second read of one key whose meta cells do not verify: the whole
   * row, verified by `row_check` (a row written by a schema version 2 process,
   * or damage: `CORRUPT`).
   */
  readonly readWhole: (key: string) => StoredValue | null
}

/**
 * The native `getMany`'s read (synchronous; the backend runs it as it runs
 * `get`, after core's argument checks): every distinct key in the ONE
 * statement of {@link getManySql}, each row decoded and verified as `get`
 * decodes its row (`meta_check`, the value's size and CRC-32: any damage
 * throws `CORRUPT` and fails the whole call), then the answers in the order of
 * `keys`, each duplicate with its own copy (core's `spreadDistinct`). Only a
 * row whose `meta_check` does not match costs a statement more (its whole-row
 * read, as in `get`).
 */
export function readMany(deps: GetManyDeps, keys: readonly string[]): (StoredValue | null)[] {
  const positions = new Map<string, number>()
  for (const key of keys) if (!positions.has(key)) positions.set(key, positions.size)
  const distinct = [...positions.keys()]
  const found: (StoredValue | null)[] = new Array(distinct.length).fill(null)
  for (const row of deps.readMany(JSON.stringify(distinct))) {
    const position = row[POSITION_CELL] as number
    const key = distinct[position] as string
    const listed = row[LISTED_CELL]
    if (listed === 1) throw missingFromPrimaryIndex(key)
    if (listed !== null) continue
    const decoded = decodeValueRow(deps.namespace, key, row)
    found[position] = decoded === UNVERIFIED ? deps.readWhole(key) : decoded
  }
  return spreadDistinct(keys, (key) => found[positions.get(key) as number])
}
