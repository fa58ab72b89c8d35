import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  assertValidKey,
  escapeForDisplay,
  isAgentStateError,
  keyProblem,
  MAX_KEY_BYTES,
  quoteForMessage,
  RESERVED_SEGMENT_PREFIX,
} from '../src/index.js'

/**
 * The previous implementation of `keyProblem` (split, a regex, `isWellFormed`,
 * `TextEncoder`), kept as the oracle: the one-pass version must give the same
 * answer, message included, for every string.
 */
function oracleKeyProblem(key: unknown, maxKeyBytes = MAX_KEY_BYTES): string | undefined {
  if (typeof key !== 'string') return 'a key must be a string'
  if (key.length === 0) return 'a key must not be empty'
  if (!key.isWellFormed()) return 'a key must not contain unpaired surrogates'
  // biome-ignore lint/suspicious/noControlCharactersInRegex: rejecting them is the point
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'a key must not contain control characters'
  if (key.includes('\\')) return 'a key must not contain a backslash'
  const bytes = new TextEncoder().encode(key).byteLength
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

const REJECTED = [
  '',
  '/a',
  'a/',
  'a//b',
  '/',
  '//',
  '.',
  '..',
  'a/./b',
  'a/../b',
  'a/.',
  './a',
  'a\u0000b',
  'a\u001fb',
  'a\u007fb',
  'a\\b',
  'a\ud800b',
  '\udc00',
  'a\ud800',
  '\udc00\ud800',
  '😀\ud83d',
  RESERVED_SEGMENT_PREFIX,
  `a/${RESERVED_SEGMENT_PREFIX}x`,
  `${RESERVED_SEGMENT_PREFIX}/a`,
  'x'.repeat(1025),
  '😀'.repeat(257),
  // Several problems at once: the reported one follows the oracle's order.
  '/a\\b',
  '../\u0001',
  'a\u0001\ud800',
  `${'x'.repeat(1100)}//`,
]

const ACCEPTED = [
  'a b',
  '100%',
  '#?&=+',
  '😀/日本語/عربى',
  '.hidden/a.',
  '.../a',
  '.a/..b/b..',
  'x'.repeat(300),
  'x'.repeat(1024),
  'é'.repeat(512),
  '😀'.repeat(256),
  '\ue000\uffff\u{10ffff}',
  `${RESERVED_SEGMENT_PREFIX.slice(0, -1)}x`,
  `a${RESERVED_SEGMENT_PREFIX}`,
  `a/b${RESERVED_SEGMENT_PREFIX}`,
]

describe('key rules', () => {
  it.each(REJECTED.map((key) => [key]))('rejects %j', (key) => {
    expect(keyProblem(key)).toBeTypeOf('string')
    expect(keyProblem(key)).toBe(oracleKeyProblem(key))
    let thrown: unknown
    try {
      assertValidKey(key)
    } catch (error) {
      thrown = error
    }
    expect(isAgentStateError(thrown, 'INVALID_KEY')).toBe(true)
  })

  it.each(ACCEPTED.map((key) => [key]))('accepts %j', (key) => {
    expect(keyProblem(key)).toBeUndefined()
    expect(oracleKeyProblem(key)).toBeUndefined()
  })

  it('rejects non-strings', () => {
    for (const key of [undefined, null, 1, {}, ['a']]) {
      expect(keyProblem(key)).toBe('a key must be a string')
    }
  })

  it('counts the limit in UTF-8 bytes, not characters', () => {
    expect(keyProblem('é'.repeat(512))).toBeUndefined()
    expect(keyProblem('é'.repeat(513))).toBe('a key must be at most 1024 UTF-8 bytes (got 1026)')
    expect(keyProblem('日'.repeat(341))).toBeUndefined()
    expect(keyProblem('日'.repeat(342))).toMatch(/got 1026/)
    expect(keyProblem('ab', 1)).toMatch(/at most 1 UTF-8 bytes/)
  })
})

/** Code units that sit on the rules' edges, weighted so that generated keys hit them often. */
const interestingUnit = fc.oneof(
  fc.constantFrom('/', '.', '\\', 'a', '~', 's', ' ', 'é', '日', '\ue000', '\uffff', '\u0080'),
  fc.constantFrom('\u0000', '\u001f', '\u0020', '\u007e', '\u007f', '\u07ff', '\u0800'),
  fc.constantFrom('\ud7ff', '\ud800', '\udbff', '\udc00', '\udfff', '\ud83d', '\ude00'),
  fc.constantFrom('😀', '\u{10ffff}', '\u{10000}'),
  fc.constantFrom(RESERVED_SEGMENT_PREFIX, '.as', 'as~', '..', '/./', '/../', '//'),
)

const edgyString = fc.oneof(
  fc.array(interestingUnit, { maxLength: 40 }).map((parts) => parts.join('')),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: fc.constantFrom('a', '/', '.', 'é', '😀', '\ud800'), maxLength: 60 }),
  fc
    .array(fc.string({ unit: 'grapheme-ascii', maxLength: 6 }), { maxLength: 8 })
    .map((segments) => segments.join('/')),
)

/** Strings around the 1024-byte limit, built from units of 1 to 4 UTF-8 bytes. */
const longString = fc
  .tuple(
    fc.array(fc.constantFrom('a', 'é', '日', '😀', '/', '.'), { minLength: 1, maxLength: 8 }),
    fc.integer({ min: 200, max: 1100 }),
    edgyString,
  )
  .map(([unit, repeat, tail]) => {
    const body = unit.join('')
    return `${body.repeat(Math.ceil(repeat / body.length))}${tail}`
  })

describe('keyProblem matches the previous implementation', () => {
  it('on strings full of edge cases', () => {
    fc.assert(
      fc.property(edgyString, (key) => {
        expect(keyProblem(key)).toBe(oracleKeyProblem(key))
      }),
      { numRuns: 20_000 },
    )
  })

  it('on long strings around the byte limit', () => {
    fc.assert(
      fc.property(longString, (key) => {
        expect(keyProblem(key)).toBe(oracleKeyProblem(key))
      }),
      { numRuns: 3_000 },
    )
  })

  it('on arbitrary full-Unicode and binary strings, with any limit', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 300 }),
          fc.string({ unit: 'grapheme', maxLength: 100 }),
          fc.string({ unit: 'binary-ascii', maxLength: 100 }),
        ),
        fc.integer({ min: 0, max: 1200 }),
        (key, limit) => {
          expect(keyProblem(key, limit)).toBe(oracleKeyProblem(key, limit))
        },
      ),
      { numRuns: 20_000 },
    )
  })
})

describe('invalid keys in error messages', () => {
  /** Raw characters that must never be printed: controls, separators, bidirectional formatting. */
  const UNSAFE = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ufeff]/
  const hasRawUnsafe = (text: string): boolean =>
    UNSAFE.test(text) || [...text].some((char) => char.charCodeAt(0) < 0x20)

  function messageOf(key: unknown): string {
    try {
      assertValidKey(key)
    } catch (error) {
      if (isAgentStateError(error, 'INVALID_KEY')) return error.message
      throw error
    }
    throw new Error(`expected ${JSON.stringify(key)} to be refused`)
  }

  it('escapes U+007F instead of printing it raw', () => {
    const message = messageOf('a\u007fb')
    expect(message).toContain('"a\\u007fb"')
    expect(hasRawUnsafe(message)).toBe(false)
  })

  it('escapes C0, C1 and bidirectional controls next to an invalid part', () => {
    const message = messageOf('x\u0085\u202e\u0007/../y\u2028')
    expect(message).toContain('"x\\u0085\\u202e\\u0007/../y\\u2028"')
    expect(hasRawUnsafe(message)).toBe(false)
  })

  // Random Unicode rarely hits these ranges: mix them in on purpose.
  const unsafeKeys = fc
    .array(
      fc.oneof(
        fc.constantFrom('\u0000', '\u001b', '\u007f', '\u0085', '\u009f', '\u202e', '\u2028'),
        fc.constantFrom('\u2066', '\ufeff', '/', '.', '..', '\\', 'a'),
        fc.string({ unit: 'binary', maxLength: 4 }),
      ),
      { maxLength: 40 },
    )
    .map((parts) => parts.join(''))

  it('never prints a raw control character, whatever the key', () => {
    fc.assert(
      fc.property(unsafeKeys, (key) => {
        if (keyProblem(key) === undefined) return
        expect(hasRawUnsafe(messageOf(key))).toBe(false)
      }),
      { numRuns: 5_000 },
    )
  })

  it('quoteForMessage keeps ordinary text as JSON.stringify does', () => {
    expect(quoteForMessage('notes/été 🎉 "q"')).toBe(JSON.stringify('notes/été 🎉 "q"'))
  })

  it('escapeForDisplay escapes controls, separators and bidi characters, and nothing else', () => {
    expect(
      escapeForDisplay('a\u001b[31m\u009b1m\u202egnp.exe\u2066x\u2069\u2028\ufeff\u0000'),
    ).toBe('a\\u001b[31m\\u009b1m\\u202egnp.exe\\u2066x\\u2069\\u2028\\ufeff\\u0000')
    expect(escapeForDisplay('notes/été 🎉 "q" \\ 日本')).toBe('notes/été 🎉 "q" \\ 日本')
  })
})
