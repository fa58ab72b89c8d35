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
})
