import { describe, expect, it } from 'vitest'
import { isValidId } from '../src/index.js'
import { canonicalJson, checksumOf } from '../src/internal.js'
import { uuidv7 } from '../src/shared/ids.js'

describe('uuidv7', () => {
  it('has the RFC 9562 layout and embeds the timestamp', () => {
    const now = Date.UTC(2026, 0, 2, 3, 4, 5, 678)
    const id = uuidv7(now + 10_000_000)
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(Number.parseInt(id.replaceAll('-', '').slice(0, 12), 16)).toBe(now + 10_000_000)
  })

  it('is unique and ordered within one millisecond', () => {
    const ids = Array.from({ length: 5000 }, () => uuidv7(Date.now() + 20_000_000))
    expect(new Set(ids).size).toBe(ids.length)
    expect([...ids].sort()).toEqual(ids)
  })
})

describe('ids', () => {
  it('accepts plain ids and rejects anything that could escape or collide', () => {
    for (const good of ['a', 'review-42', 'A.b_c-9', uuidv7(), 'x'.repeat(128)])
      expect(isValidId(good)).toBe(true)
    for (const bad of [
      '',
      '.',
      '..',
      '.x',
      '-x',
      '_x',
      'a/b',
      'a\\b',
      'a b',
      'a\n',
      'é',
      'x'.repeat(129),
      5,
      null,
    ]) {
      expect(isValidId(bad)).toBe(false)
    }
  })
})

describe('canonical JSON', () => {
  it('sorts keys at every level so equal values have equal checksums', () => {
    const a = { b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }
    const b = { a: { c: null, d: [1, { y: 2, z: 1 }] }, b: 1 }
    expect(canonicalJson(a)).toBe('{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}')
    expect(checksumOf(a)).toBe(checksumOf(b))
    expect(checksumOf(a)).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(checksumOf({ ...a, b: 2 })).not.toBe(checksumOf(a))
  })
})
