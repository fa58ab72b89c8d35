import { compareUtf8 } from './byte-order.js'
import type { CursorPosition } from './cursor.js'

/**
 * Turns a listing prefix and cursor position into bounds of an index range
 * scan, for backends whose store compares keys byte by byte as UTF-8 (SQLite's
 * BINARY collation, PostgreSQL's `COLLATE "C"` in a UTF8 database). UTF-8 byte
 * order is code-point order, so bounds are computed on code points.
 */

/** A key range: `key >= from` (or `key > from` when not `inclusive`), and `key < to` when `to` is set. */
export interface KeyRange {
  readonly from: string
  readonly inclusive: boolean
  readonly to: string | undefined
}

/**
 * The smallest string above every string that starts with `prefix`, in
 * code-point order, or `undefined` when there is none (the prefix is all
 * U+10FFFF). `prefix` must be well-formed.
 */
export function prefixEnd(prefix: string): string | undefined {
  const points = Array.from(prefix)
  while (points.length > 0) {
    const last = (points.pop() as string).codePointAt(0) as number
    const next = last + 1 === 0xd800 ? 0xe000 : last + 1
    if (next <= 0x10ffff) return points.join('') + String.fromCodePoint(next)
  }
  return undefined
}

/**
 * The range of keys starting with `prefix`, or `null` when no valid key can
 * (the prefix holds an unpaired surrogate other than a trailing high one).
 * A trailing high surrogate matches the astral characters it begins, as
 * `String.prototype.startsWith` would.
 */
export function prefixRange(prefix: string): KeyRange | null {
  if (prefix.isWellFormed()) return { from: prefix, inclusive: true, to: prefixEnd(prefix) }
  const rest = prefix.slice(0, -1)
  const high = prefix.charCodeAt(prefix.length - 1)
  if (high < 0xd800 || high > 0xdbff || !rest.isWellFormed()) return null
  const first = 0x10000 + (high - 0xd800) * 0x400
  return {
    from: rest + String.fromCodePoint(first),
    inclusive: true,
    to: high === 0xdbff ? prefixEnd(rest) : rest + String.fromCodePoint(first + 0x400),
  }
}

/**
 * Narrows `range` to the keys after a cursor position (all of a delimiter
 * group skipped), or returns `null` when nothing can follow.
 */
export function afterPosition(
  range: KeyRange,
  position: CursorPosition | undefined,
): KeyRange | null {
  if (position === undefined) return range
  let from = position.after
  let inclusive = false
  if (position.group) {
    const end = prefixEnd(position.after)
    if (end === undefined) return null
    from = end
    inclusive = true
  }
  const order = compareUtf8(from, range.from)
  if (order < 0 || (order === 0 && inclusive && !range.inclusive)) return range
  return { from, inclusive, to: range.to }
}
