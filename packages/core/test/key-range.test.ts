import { describe, expect, it } from 'vitest'
import { prefixEnd, prefixRange } from '../src/key-range.js'

describe('prefix ranges', () => {
  it('computes the first string after every string with a prefix, in code-point order', () => {
    expect(prefixEnd('ab')).toBe('ac')
    expect(prefixEnd('a\uD7FF')).toBe('a\uE000')
    expect(prefixEnd('a\u{10FFFF}')).toBe('b')
    expect(prefixEnd('\u{10FFFF}')).toBeUndefined()
    expect(prefixEnd('')).toBeUndefined()
  })

  it('handles a trailing high surrogate and refuses other unpaired surrogates', () => {
    expect(prefixRange('x\uD83D')).toEqual({
      from: 'x\u{1F400}',
      inclusive: true,
      to: 'x\u{1F800}',
    })
    expect(prefixRange('x\uDE00')).toBeNull()
    expect(prefixRange('')).toEqual({ from: '', inclusive: true, to: undefined })
  })
})
