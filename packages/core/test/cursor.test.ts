import { describe, expect, it } from 'vitest'
import { decodeCursor, encodeCursor, isAgentStateError } from '../src/index.js'

describe('cursors', () => {
  it('round-trip a position', () => {
    const position = { after: 'a/😀 b', group: true }
    expect(decodeCursor(encodeCursor(position))).toEqual(position)
  })

  it.each(['', 'not-base64-json', Buffer.from('{"v":2,"a":"x","g":0}').toString('base64url')])(
    'reject the malformed cursor %j with INVALID_ARGUMENT',
    (cursor) => {
      expect(() => decodeCursor(cursor)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as unknown as Error,
      )
      try {
        decodeCursor(cursor)
      } catch (error) {
        expect(isAgentStateError(error, 'INVALID_ARGUMENT')).toBe(true)
      }
    },
  )
})
