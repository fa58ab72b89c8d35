import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compareUtf8, sortUtf8 } from '../src/index.js'

const bytes = (text: string) => Buffer.from(text, 'utf8')

describe('compareUtf8', () => {
  it('orders astral characters after U+E000–U+FFFF, unlike UTF-16 order', () => {
    const keys = ['\u{1F600}', '\uE000', '\uFFFD', 'z', '\u{10000}', 'é']
    expect(sortUtf8(keys)).toEqual(['z', 'é', '\uE000', '\uFFFD', '\u{10000}', '\u{1F600}'])
    expect([...keys].sort()).not.toEqual(sortUtf8(keys))
  })

  it('agrees with Buffer.compare on many generated strings', () => {
    const alphabet = [
      'a',
      'b',
      '/',
      'é',
      '\u07FF',
      '\u0800',
      '\uD7FF',
      '\uE000',
      '\uFFFF',
      '\u{10000}',
      '\u{10FFFF}',
      '😀',
    ]
    let seed = 7
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed
    }
    const strings = Array.from({ length: 400 }, () =>
      Array.from({ length: random() % 5 }, () => alphabet[random() % alphabet.length]).join(''),
    )
    for (const a of strings) {
      for (const b of strings.slice(0, 50)) {
        expect(Math.sign(compareUtf8(a, b))).toBe(Math.sign(Buffer.compare(bytes(a), bytes(b))))
      }
    }
  })

  it('agrees with Buffer.compare on arbitrary well-formed strings, and with a code-point walk on lone surrogates', () => {
    const unit = fc.oneof(
      fc.constantFrom(
        'a',
        '/',
        '\u07ff',
        '\ud7ff',
        '\ue000',
        '\uffff',
        '\u{10000}',
        '😀',
        '\u{10ffff}',
      ),
      fc.string({ unit: 'grapheme', maxLength: 2 }),
    )
    const wellFormed = fc.array(unit, { maxLength: 8 }).map((units) => units.join(''))
    fc.assert(
      fc.property(wellFormed, wellFormed, (a, b) => {
        expect(Math.sign(compareUtf8(a, b))).toBe(Math.sign(Buffer.compare(bytes(a), bytes(b))))
      }),
      { numRuns: 20_000 },
    )
    // Lone surrogates have no UTF-8 bytes; the oracle is the plain code-unit walk that ranks
    // any surrogate above every other BMP unit, as an astral code point ranks in UTF-8.
    const walk = (a: string, b: string) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        const x = a.charCodeAt(i)
        const y = b.charCodeAt(i)
        if (x === y) continue
        const xs = x >= 0xd800 && x <= 0xdfff
        const ys = y >= 0xd800 && y <= 0xdfff
        return xs === ys ? Math.sign(x - y) : xs ? 1 : -1
      }
      return Math.sign(a.length - b.length)
    }
    const any = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 6 }),
      fc
        .array(fc.constantFrom('a', '\ud800', '\udfff', '\ue000', '\uffff'), { maxLength: 6 })
        .map((u) => u.join('')),
    )
    fc.assert(
      fc.property(any, any, (a, b) => {
        expect(Math.sign(compareUtf8(a, b))).toBe(walk(a, b))
      }),
      { numRuns: 20_000 },
    )
  })
})
