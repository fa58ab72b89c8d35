import { isAgentStateError } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import { checksumOf, decodeSnapshot, encodeSnapshot, type SnapshotBody } from '../src/index.js'

const body: SnapshotBody = {
  workerId: 'w1',
  status: 'running',
  iterationsCompleted: 2,
  state: { plan: ['a', 'b'] },
  transcript: [{ role: 'user', content: 'hi' }],
  summary: null,
  result: null,
  suspension: null,
  resume: null,
  owner: { holder: 'h', token: 3 },
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  audit: [],
}

function codeOf(run: () => unknown): string {
  try {
    run()
  } catch (error) {
    if (isAgentStateError(error)) return error.code
    throw error
  }
  return 'returned'
}

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)
const bytes = (value: unknown) =>
  new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value))

describe('snapshot codec', () => {
  it('round-trips with a schema version and a checksum', () => {
    const encoded = encodeSnapshot(body)
    const envelope = JSON.parse(text(encoded))
    expect(envelope).toMatchObject({ format: 'agent-state/worker-snapshot', schemaVersion: 1 })
    expect(envelope.checksum).toBe(checksumOf(body))
    expect(decodeSnapshot(encoded, 'w1')).toEqual(body)
  })

  it('rejects corruption of every kind as SNAPSHOT_CORRUPT', () => {
    const envelope = JSON.parse(text(encodeSnapshot(body)))
    const cases: unknown[] = [
      'not json',
      '',
      new Uint8Array([0xff, 0xfe]),
      { ...envelope, checksum: undefined },
      { ...envelope, format: 'other' },
      { ...envelope, body: { ...envelope.body, iterationsCompleted: 3 } },
      {
        ...envelope,
        body: { ...envelope.body, status: 'paused' },
        checksum: checksumOf({ ...envelope.body, status: 'paused' }),
      },
      {
        ...envelope,
        body: { ...envelope.body, workerId: 'w2' },
        checksum: checksumOf({ ...envelope.body, workerId: 'w2' }),
      },
      null,
      [],
    ]
    for (const stored of cases) {
      const raw = stored instanceof Uint8Array ? stored : bytes(stored)
      expect(codeOf(() => decodeSnapshot(raw, 'w1'))).toBe('SNAPSHOT_CORRUPT')
    }
  })

  it('rejects another schema version as SNAPSHOT_INCOMPATIBLE', () => {
    const envelope = JSON.parse(text(encodeSnapshot(body)))
    for (const schemaVersion of [2, 99]) {
      expect(codeOf(() => decodeSnapshot(bytes({ ...envelope, schemaVersion }), 'w1'))).toBe(
        'SNAPSHOT_INCOMPATIBLE',
      )
    }
  })

  it('refuses to encode a snapshot that breaks its own schema', () => {
    expect(() => encodeSnapshot({ ...body, iterationsCompleted: -1 })).toThrow()
  })
})
