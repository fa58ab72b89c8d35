/** The UI's value preview (a pure function): how each kind of value is shown, and cut. */
import { describe, expect, it } from 'vitest'
import { isLoopbackHost } from '../src/ui/ui-server.js'
import { PREVIEW_BYTES, previewValue } from '../src/ui/value-preview.js'

const bytes = (text: string) => new TextEncoder().encode(text)

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
