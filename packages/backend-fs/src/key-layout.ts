import { createHash } from 'node:crypto'
import { RESERVED_SEGMENT_PREFIX } from '@agent-state/core'

/**
 * How keys become file names. A key becomes ONE file name in a flat
 * directory, never a path: the lower-case hex of its UTF-8 bytes when that
 * fits, otherwise `h` and the SHA-256 of the key (the full key is stored
 * inside the record file and checked on every read). So `a` and `a/b` never
 * clash as file and directory, no name can hold `/` or `..`, and names differ
 * in more than case even on a case-insensitive or normalizing filesystem.
 */

/** Keys up to this many UTF-8 bytes are stored under their hex name (2 characters a byte). */
export const MAX_HEX_KEY_BYTES = 120

/** Temp files start with the reserved prefix, so they can never be a record name. */
export const TEMP_PREFIX = `${RESERVED_SEGMENT_PREFIX}tmp.`

const HEX_NAME = /^(?:[0-9a-f]{2}){1,120}$/
const HASHED_NAME = /^h[0-9a-f]{64}$/

/** The file name of a key's record (and of its lock directory). */
export function fileNameOf(key: string): string {
  const bytes = Buffer.from(key, 'utf8')
  if (bytes.byteLength <= MAX_HEX_KEY_BYTES) return bytes.toString('hex')
  return `h${createHash('sha256').update(bytes).digest('hex')}`
}

/**
 * The path of `name` in `dir`: both come from this package (`dir` an absolute
 * path `path.join` built once, `name` one flat file name of this module), so
 * plain concatenation is the same path; `path.join` re-normalizes the whole
 * string, about 0.5 µs of a 13 µs `get`.
 */
export function pathIn(dir: string, name: string): string {
  return `${dir}/${name}`
}

/** What a directory entry is: a hex-named record (with its key), a hashed record, a temp file, or foreign. */
export type NameKind =
  | { readonly kind: 'hex'; readonly key: string }
  | { readonly kind: 'hashed' }
  | { readonly kind: 'temp' }
  | { readonly kind: 'other' }

/** Classifies a directory entry of the records directory. */
export function classifyName(name: string): NameKind {
  if (HEX_NAME.test(name)) return { kind: 'hex', key: Buffer.from(name, 'hex').toString('utf8') }
  if (HASHED_NAME.test(name)) return { kind: 'hashed' }
  if (name.startsWith(TEMP_PREFIX)) return { kind: 'temp' }
  return { kind: 'other' }
}
