import { describe, expect, it } from 'vitest'
import {
  assertValidKey,
  isAgentStateError,
  keyProblem,
  RESERVED_SEGMENT_PREFIX,
} from '../src/index.js'

describe('key rules', () => {
  it.each([
    [''],
    ['/a'],
    ['a/'],
    ['a//b'],
    ['.'],
    ['..'],
    ['a/./b'],
    ['a/../b'],
    ['a\u0000b'],
    ['a\u001fb'],
    ['a\u007fb'],
    ['a\\b'],
    ['a\ud800b'],
    ['\udc00'],
    [`a/${RESERVED_SEGMENT_PREFIX}x`],
    ['x'.repeat(1025)],
  ])('rejects %j', (key) => {
    expect(keyProblem(key)).toBeTypeOf('string')
    let thrown: unknown
    try {
      assertValidKey(key)
    } catch (error) {
      thrown = error
    }
    expect(isAgentStateError(thrown, 'INVALID_KEY')).toBe(true)
  })

  it.each([
    ['a b'],
    ['100%'],
    ['#?&=+'],
    ['😀/日本語/عربى'],
    ['.hidden/a.'],
    ['x'.repeat(300)],
    ['é'.repeat(512)],
    [`${RESERVED_SEGMENT_PREFIX.slice(0, -1)}x`],
  ])('accepts %j', (key) => {
    expect(keyProblem(key)).toBeUndefined()
  })

  it('counts the limit in UTF-8 bytes, not characters', () => {
    expect(keyProblem('é'.repeat(512))).toBeUndefined()
    expect(keyProblem('é'.repeat(513))).toMatch(/1024/)
  })
})
