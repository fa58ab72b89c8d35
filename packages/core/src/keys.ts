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

const SLASH = 0x2f
const DOT = 0x2e
const BACKSLASH = 0x5c
const DELETE = 0x7f

const NOT_A_STRING = 'a key must be a string'
const EMPTY = 'a key must not be empty'
const UNPAIRED_SURROGATE = 'a key must not contain unpaired surrogates'
const CONTROL = 'a key must not contain control characters'
const HAS_BACKSLASH = 'a key must not contain a backslash'
const EMPTY_SEGMENT = 'a key must not have an empty segment or a leading or trailing "/"'
const DOT_SEGMENT = 'a key must not have a "." or ".." segment'
const RESERVED = `segments starting with "${RESERVED_SEGMENT_PREFIX}" are reserved`

/**
 * Why `key` is not a valid key, or `undefined` when it is. The rules:
 * 1 to 1024 UTF-8 bytes; `/`-separated segments; no empty, `.` or `..`
 * segment (so no leading, trailing or doubled `/`); no control characters
 * (U+0000–U+001F, U+007F); no backslash; no unpaired surrogate; no segment
 * starting with {@link RESERVED_SEGMENT_PREFIX}. Everything else is allowed.
 *
 * When a key breaks several rules, the problem reported is the first of:
 * unpaired surrogate, control character, backslash, length, then the first
 * bad segment. Every key is checked in one pass over its UTF-16 code units
 * (this runs on every operation), so the check allocates nothing.
 */
export function keyProblem(key: unknown, maxKeyBytes = MAX_KEY_BYTES): string | undefined {
  if (typeof key !== 'string') return NOT_A_STRING
  const length = key.length
  if (length === 0) return EMPTY
  let bytes = 0
  let control = false
  let backslash = false
  let segmentProblem: string | undefined
  let segmentStart = 0
  for (let i = 0; i < length; i++) {
    const code = key.charCodeAt(i)
    if (code < 0x80) {
      bytes += 1
      if (code === SLASH) {
        segmentProblem ??= segmentProblemOf(key, segmentStart, i)
        segmentStart = i + 1
      } else if (code < 0x20 || code === DELETE) control = true
      else if (code === BACKSLASH) backslash = true
    } else if (code < 0x800) bytes += 2
    else if (code < 0xd800 || code > 0xdfff) bytes += 3
    else if (code <= 0xdbff && i + 1 < length && isLowSurrogate(key.charCodeAt(i + 1))) {
      // A pair is one astral code point: 4 UTF-8 bytes.
      bytes += 4
      i++
    } else {
      // Unpaired surrogates outrank every other problem, so stop here.
      return UNPAIRED_SURROGATE
    }
  }
  if (control) return CONTROL
  if (backslash) return HAS_BACKSLASH
  if (bytes > maxKeyBytes) return `a key must be at most ${maxKeyBytes} UTF-8 bytes (got ${bytes})`
  return segmentProblem ?? segmentProblemOf(key, segmentStart, length)
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff
}

/** The problem of the segment `key[start, end)`, if any. */
function segmentProblemOf(key: string, start: number, end: number): string | undefined {
  const size = end - start
  if (size === 0) return EMPTY_SEGMENT
  if (key.charCodeAt(start) !== DOT) return undefined
  if (size === 1 || (size === 2 && key.charCodeAt(start + 1) === DOT)) return DOT_SEGMENT
  if (size >= RESERVED_SEGMENT_PREFIX.length && key.startsWith(RESERVED_SEGMENT_PREFIX, start)) {
    return RESERVED
  }
  return undefined
}

/**
 * Characters `JSON.stringify` leaves raw that must not reach a terminal or a
 * log line: DEL and the C1 controls (U+007F–U+009F), the line and paragraph
 * separators, and the bidirectional formatting characters (which can make a
 * message read differently from what it says), plus U+FEFF.
 */
const UNSAFE_IN_MESSAGES = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/g

/**
 * Quotes `text` for an error message or log: `JSON.stringify` (which escapes
 * U+0000–U+001F, quotes, backslashes and unpaired surrogates), then every
 * other control or bidirectional formatting character as `\uXXXX`. The
 * result is printable ASCII plus ordinary printable characters, whatever the
 * input, and shows exactly which code units it holds.
 */
export function quoteForMessage(text: string): string {
  return JSON.stringify(text).replace(UNSAFE_IN_MESSAGES, escapeCodeUnit)
}

/** {@link UNSAFE_IN_MESSAGES} for one character (no `g`: a global expression's `test` is stateful). */
const UNSAFE_CHAR = new RegExp(UNSAFE_IN_MESSAGES.source)

/**
 * `text` for a terminal or a table, unquoted: every control character (C0,
 * DEL, C1), line and paragraph separator, bidirectional formatting character
 * and U+FEFF written as `\uXXXX`, everything else as it is. A key, value or
 * writer shown this way can neither drive the terminal nor reorder what is
 * printed around it. A backslash is left as it is.
 */
export function escapeForDisplay(text: string): string {
  let out = ''
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    const char = text.charAt(i)
    // The C0 controls by code: a regular expression for them trips the linter's control-character rule.
    out += code < 0x20 || UNSAFE_CHAR.test(char) ? escapeCodeUnit(char) : char
  }
  return out
}

function escapeCodeUnit(char: string): string {
  return `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`
}

/**
 * Throws `INVALID_KEY` unless `key` is valid (see {@link keyProblem}).
 * The message quotes the key with {@link quoteForMessage}, so control
 * characters are visible as escapes and never printed raw.
 */
export function assertValidKey(key: unknown, maxKeyBytes = MAX_KEY_BYTES): asserts key is string {
  const problem = keyProblem(key, maxKeyBytes)
  if (problem !== undefined) {
    const shown = typeof key === 'string' ? quoteForMessage(key.slice(0, 200)) : typeof key
    throw new AgentStateError('INVALID_KEY', `Invalid key ${shown}: ${problem}`, {
      context: { problem },
    })
  }
}

/** Whether `key` is valid (see {@link keyProblem}). */
export function isValidKey(key: unknown, maxKeyBytes = MAX_KEY_BYTES): key is string {
  return keyProblem(key, maxKeyBytes) === undefined
}
