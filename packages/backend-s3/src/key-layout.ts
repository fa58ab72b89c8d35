import { createHash } from 'node:crypto'
import { RESERVED_SEGMENT_PREFIX } from '@agent-state/core'

/**
 * S3 caps a whole object key at 1024 bytes, but the object key is
 * `<prefix><namespace>/<key>` and the contract allows 1024-byte keys. So keys
 * longer than a threshold `T` are stored under a shortened name, in a way
 * that keeps S3's listing order equal to the keys' byte order except inside a
 * group of long keys sharing the same head (which the scan sorts itself):
 *
 * - a key of at most `T` bytes is its own object name;
 * - a longer key is named `head + "~" + 32 hex digits of SHA-256(key)`, where
 *   `head` is the key cut at the first code-point boundary at or after `T`
 *   bytes (so it is 0 to 3 bytes longer than `T`).
 *
 * Why the order holds: no short key is longer than a head, so a head is never
 * a proper prefix of a short key; two heads are either equal (one group, kept
 * contiguous in the listing) or differ at a byte inside both, because UTF-8
 * boundaries up to a byte depend only on the bytes before it. The full key is
 * kept in the object's body, so a read can check that it got the right one.
 */

/** Bytes a long key's name adds after its head: `~` and 32 hex digits. */
const SUFFIX_BYTES = 33
/** A head may run up to 3 bytes past `T` to end on a code-point boundary. */
const HEAD_SLACK = 3

const encoder = new TextEncoder()

/** The naming rules for one store, given the bytes left for names after `<prefix><namespace>/`. */
export interface ObjectNaming {
  /** Keys of at most this many UTF-8 bytes are stored under their own name. */
  readonly threshold: number
  /** The object name (without the base) of a key. */
  nameOf(key: string): string
  /** Whether an object name (without the base) is a shortened long key. */
  isShortened(name: string): boolean
  /** The group a shortened name belongs to (its head). */
  headOf(name: string): string
  /**
   * A name to pass as S3 `StartAfter` so that the listing holds every key
   * strictly after `after` (and perhaps some before it, in `after`'s group).
   */
  startAfter(after: string): string
  /** A name prefix every object whose key starts with `prefix` has. */
  listPrefix(prefix: string): string
}

/** The first code-point boundary of `key` at or after `bytes` UTF-8 bytes, as a string prefix. */
function cutAtOrAfter(key: string, bytes: number): string {
  let used = 0
  let index = 0
  while (index < key.length && used < bytes) {
    const code = key.codePointAt(index) ?? 0
    used += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
    index += code > 0xffff ? 2 : 1
  }
  return key.slice(0, index)
}

/** The longest prefix of `key` on a code-point boundary with at most `bytes` UTF-8 bytes. */
function cutAtOrBefore(key: string, bytes: number): string {
  let used = 0
  let index = 0
  while (index < key.length) {
    const code = key.codePointAt(index) ?? 0
    const size = code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4
    if (used + size > bytes) break
    used += size
    index += code > 0xffff ? 2 : 1
  }
  return key.slice(0, index)
}

/**
 * The naming for a store whose names may use `nameBytes` bytes (the server's
 * object key limit minus the base). Returns `undefined` when that is too
 * little room for the scheme.
 */
export function createObjectNaming(nameBytes: number): ObjectNaming | undefined {
  const threshold = nameBytes - SUFFIX_BYTES - HEAD_SLACK
  if (threshold < 64) return undefined
  const long = (text: string): boolean => encoder.encode(text).byteLength > threshold
  const headOfKey = (key: string): string => cutAtOrAfter(key, threshold)
  return {
    threshold,
    nameOf(key) {
      if (!long(key)) return key
      const hash = createHash('sha256').update(key).digest('hex').slice(0, 32)
      return `${headOfKey(key)}~${hash}`
    },
    isShortened: long,
    headOf(name) {
      return name.slice(0, name.length - SUFFIX_BYTES)
    },
    startAfter(after) {
      return long(after) ? headOfKey(after) : after
    },
    listPrefix(prefix) {
      return long(prefix) ? cutAtOrBefore(prefix, threshold) : prefix
    },
  }
}

/** Whether a key lies in the reserved area (the probe's keys): listings skip it. */
export function isInternal(key: string): boolean {
  return key.split('/').some((segment) => segment.startsWith(RESERVED_SEGMENT_PREFIX))
}
