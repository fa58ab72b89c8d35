import { describe, expect, it } from 'vitest'
import { ABSENT_STATE, decodeKeyState, encodeKeyState, isAgentStateError } from '../src/index.js'

const state = {
  ...ABSENT_STATE,
  version: '1.abc',
  revision: 1,
  writer: { writerId: 'w' },
  updatedAt: 5,
  value: new Uint8Array([0, 1, 255]),
  fence: 3,
  lease: { holder: 'h', token: 3, ttlMs: 10, expiresAt: 15 },
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    return isAgentStateError(error) ? error.code : 'not-an-agent-state-error'
  }
  return undefined
}

describe('record codec', () => {
  it('round-trips a key state', () => {
    expect(decodeKeyState('k', encodeKeyState(state))).toEqual(state)
  })

  it('reports every flipped byte as CORRUPT, never as an empty value', () => {
    const bytes = encodeKeyState(state)
    for (let i = 0; i < bytes.byteLength; i++) {
      const broken = bytes.slice()
      broken[i] = (broken[i] as number) ^ 0x40
      expect(codeOf(() => decodeKeyState('k', broken))).toBe('CORRUPT')
    }
  })

  it('reports a truncated record as CORRUPT', () => {
    const bytes = encodeKeyState(state)
    expect(codeOf(() => decodeKeyState('k', bytes.subarray(0, bytes.byteLength - 1)))).toBe(
      'CORRUPT',
    )
    expect(codeOf(() => decodeKeyState('k', new Uint8Array(0)))).toBe('CORRUPT')
  })
})
