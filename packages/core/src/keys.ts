import { AgentStateError } from './errors.js'

/**
 * Segments that start with this string are reserved for records that core and
 * the backends keep next to user values (tombstones, leases, temp files).
 * A user key may not contain such a segment, so internal records can never
 * collide with a user key and never show in a listing.
 */
export const RESERVED_SEGMENT_PREFIX = '.as~'

/** Largest key the contract requires every backend to accept, in UTF-8 bytes. */
export const MAX_KEY_BYTES = 1024

const encoder = new TextEncoder()

/** Length of `text` in UTF-8 bytes. */
export function utf8ByteLength(text: string): number {
  return encoder.encode(text).byteLength
}

/**
 * Why `key` is not a valid key, or `undefined` when it is. The rules:
 * 1 to 1024 UTF-8 bytes; `/`-separated segments; no empty, `.` or `..`
 * segment (so no leading, trailing or doubled `/`); no control characters
 * (U+0000–U+001F, U+007F); no backslash; no unpaired surrogate; no segment
 * starting with {@link RESERVED_SEGMENT_PREFIX}. Everything else is allowed.
 */
export function keyProblem(key: unknown, maxKeyBytes = MAX_KEY_BYTES): string | undefined {
  if (typeof key !== 'string') return 'a key must be a string'
  if (key.length === 0) return 'a key must not be empty'
  if (!key.isWellFormed()) return 'a key must not contain unpaired surrogates'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting them is the point
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'a key must not contain control characters'
  if (key.includes('\\')) return 'a key must not contain a backslash'
  const bytes = utf8ByteLength(key)
  if (bytes > maxKeyBytes) return `a key must be at most ${maxKeyBytes} UTF-8 bytes (got ${bytes})`
  for (const segment of key.split('/')) {
    if (segment === '') return 'a key must not have an empty segment or a leading or trailing "/"'
    if (segment === '.' || segment === '..') return 'a key must not have a "." or ".." segment'
    if (segment.startsWith(RESERVED_SEGMENT_PREFIX)) {
      return `segments starting with "${RESERVED_SEGMENT_PREFIX}" are reserved`
    }
  }
  return undefined
}

/**
 * Throws `INVALID_KEY` unless `key` is valid (see {@link keyProblem}).
 * The message quotes the key with `JSON.stringify` so control characters are visible.
 */
export function assertValidKey(key: unknown, maxKeyBytes = MAX_KEY_BYTES): asserts key is string {
  const problem = keyProblem(key, maxKeyBytes)
  if (problem !== undefined) {
    const shown = typeof key === 'string' ? JSON.stringify(key.slice(0, 200)) : typeof key
    throw new AgentStateError('INVALID_KEY', `Invalid key ${shown}: ${problem}`, {
      context: { problem },
    })
  }
}

/** Whether `key` is valid (see {@link keyProblem}). */
export function isValidKey(key: unknown, maxKeyBytes = MAX_KEY_BYTES): key is string {
  return keyProblem(key, maxKeyBytes) === undefined
}
