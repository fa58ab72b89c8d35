/** The UI's value preview (a pure function): how each kind of value is shown, and cut. */
import { describe, expect, it } from 'vitest'
import { isLoopbackHost } from '../src/ui/ui-server.js'
import {
  PRETTY_MAX_DEPTH,
  PREVIEW_BYTES,
  previewValue,
  type ValuePreview,
} from '../src/ui/value-preview.js'

const bytes = (text: string) => new TextEncoder().encode(text)

/** A preview's lines hold at most 8 characters per byte of the value, plus a line's worth. */
function expectShownNearItsSize(preview: ValuePreview, size: number): void {
  const shown = preview.lines.reduce((sum, line) => sum + line.length + 1, 0)
  expect(shown, 'shown characters').toBeLessThanOrEqual(8 * size + 80)
}

describe('previewValue', () => {
  it('pretty-prints JSON, escaping control and bidi characters line by line', () => {
    const value = bytes(JSON.stringify({ a: 'x\u202ey', b: [1] }))
    expect(previewValue(value.length, value)).toEqual({
      kind: 'json',
      size: value.length,
      shownBytes: value.length,
      truncated: false,
      lines: ['{', '  "a": "x\\u202ey",', '  "b": [', '    1', '  ]', '}'],
    })
  })

  it('shows UTF-8 text with its line breaks kept and every other control escaped', () => {
    const value = bytes('one\ttwo\nthree\u0000\u001b[31m')
    const preview = previewValue(value.length, value)
    expect(preview.kind).toBe('text')
    expect(preview.lines).toEqual(['one\\u0009two', 'three\\u0000\\u001b[31m'])
  })

  it('shows bytes that are not UTF-8 as hex with an ASCII column', () => {
    const value = Uint8Array.from([0x41, 0xff, 0x00, 0x7e])
    expect(previewValue(4, value)).toMatchObject({
      kind: 'hex',
      lines: [`00000000  41 ff 00 7e${' '.repeat(36)}  |A..~|`],
    })
  })

  it('cuts a long value at the preview size, never through a character, and says so', () => {
    // 'é' is two bytes: the cut at PREVIEW_BYTES falls inside one (the first byte is 'a').
    const value = bytes(`a${'é'.repeat(PREVIEW_BYTES)}`)
    const preview = previewValue(value.length, value)
    expect(preview).toMatchObject({ kind: 'text', size: value.length, truncated: true })
    expect(preview.shownBytes).toBe(PREVIEW_BYTES)
    expect(preview.lines).toEqual([`a${'é'.repeat((PREVIEW_BYTES - 2) / 2)}`])
  })

  it('pretty-prints JSON nested up to its depth limit; deeper JSON is its text, not megabytes of indentation', () => {
    const nested = (depth: number) => bytes(`${'['.repeat(depth)}${']'.repeat(depth)}`)
    expect(previewValue(64, nested(PRETTY_MAX_DEPTH)).kind).toBe('json')
    const deep = nested(300)
    const preview = previewValue(deep.length, deep)
    expect(preview.kind).toBe('text')
    expectShownNearItsSize(preview, deep.length)
  })

  it('the depth check fails on a preview that pretty-prints any depth (mutant)', () => {
    const deep = bytes(`${'['.repeat(300)}${']'.repeat(300)}`)
    const mutant = previewValue(deep.length, deep, PREVIEW_BYTES, Number.POSITIVE_INFINITY)
    expect(mutant.kind).toBe('json')
    expect(() => expectShownNearItsSize(mutant, deep.length)).toThrow(/shown characters/)
  })

  it('reads nothing of a value over the read limit: only its size', () => {
    expect(previewValue(5_000_000, null)).toEqual({
      kind: 'not-read',
      size: 5_000_000,
      shownBytes: 0,
      truncated: true,
      lines: [],
    })
  })
})

describe('isLoopbackHost', () => {
  it('takes 127.0.0.0/8, ::1 and localhost; nothing else', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost'])
      expect(isLoopbackHost(host), host).toBe(true)
    for (const host of ['0.0.0.0', '::', '192.168.1.2', 'example.com', '127.0.0.1.example.com'])
      expect(isLoopbackHost(host), host).toBe(false)
  })
})
