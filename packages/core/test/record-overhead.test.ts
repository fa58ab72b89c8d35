import { describe, expect, it } from 'vitest'
import { encodeKeyState, RECORD_OVERHEAD_BYTES } from '../src/index.js'

describe('RECORD_OVERHEAD_BYTES', () => {
  it('bounds the codec header of the largest writer and lease the arguments allow', () => {
    // 256 UTF-16 units each (the argument limit), of the character JSON escapes longest.
    const id = '\u0001'.repeat(256)
    const value = new Uint8Array(1000)
    const record = encodeKeyState({
      version: `${Number.MAX_SAFE_INTEGER.toString(36)}.${'x'.repeat(64)}`,
      revision: Number.MAX_SAFE_INTEGER,
      writer: { writerId: id, stageId: id, sessionId: id, workerId: id },
      updatedAt: Number.MAX_SAFE_INTEGER,
      value,
      lease: {
        holder: id,
        token: Number.MAX_SAFE_INTEGER,
        ttlMs: Number.MAX_SAFE_INTEGER,
        expiresAt: Number.MAX_SAFE_INTEGER,
      },
      fence: Number.MAX_SAFE_INTEGER,
    })
    expect(record.byteLength - value.byteLength).toBeLessThanOrEqual(RECORD_OVERHEAD_BYTES)
    expect(record.byteLength - value.byteLength).toBeGreaterThan(5 * 256 * 6)
  })
})
