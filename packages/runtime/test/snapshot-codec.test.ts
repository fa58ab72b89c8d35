import { isAgentStateError } from '@agent-state/core'
import { describe, expect, it } from 'vitest'
import type { SnapshotBody } from '../src/index.js'
import {
  checksumOf,
  decodeSnapshot,
  encodeSnapshot,
  SNAPSHOT_SCHEMA_VERSION,
} from '../src/internal.js'

const body: SnapshotBody = {
  workerId: 'w1',
  status: 'running',
  iterationsCompleted: 2,
  state: { plan: ['a', 'b'] },
  transcript: [{ role: 'user', content: 'hi' }],
  summary: null,
  result: null,
  suspension: null,
  conditions: null,
  transcriptArchive: [],
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
    expect(envelope).toMatchObject({ format: 'agent-state/worker-snapshot', schemaVersion: 2 })
    expect(envelope.checksum).toBe(checksumOf(body))
    expect(decodeSnapshot(encoded, 'w1')).toEqual(body)
  })

  it('writes a worker that owns a run at version 3 and every other at 2', () => {
    const owning = { ...body, run: { runId: 'r1' } }
    const envelope = JSON.parse(text(encodeSnapshot(owning)))
    expect(envelope.schemaVersion).toBe(3)
    expect(SNAPSHOT_SCHEMA_VERSION).toBe(3)
    expect(decodeSnapshot(encodeSnapshot(owning), 'w1')).toEqual(owning)
    expect(JSON.parse(text(encodeSnapshot(body))).schemaVersion).toBe(2)
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

  it('rejects a newer schema version as SNAPSHOT_INCOMPATIBLE', () => {
    const envelope = JSON.parse(text(encodeSnapshot(body)))
    for (const schemaVersion of [SNAPSHOT_SCHEMA_VERSION + 1, 99]) {
      expect(codeOf(() => decodeSnapshot(bytes({ ...envelope, schemaVersion }), 'w1'))).toBe(
        'SNAPSHOT_INCOMPATIBLE',
      )
    }
  })

  it('reads a version 1 snapshot, moving condition payloads out of the Suspension', () => {
    const suspension = {
      status: 'suspended',
      handle: { workerId: 'w1', snapshotKey: 'workers/w1/snapshot.json' },
      reason: 'wait',
      initiator: 'self',
      conditions: {
        trigger: { provider: 'github', id: 't-1', config: { token: 'ghp_secret' } },
        timeout: { durationMinutes: 5, onTimeout: 'fail' },
      },
      iterationsCompleted: 2,
      suspendedAt: '2026-01-01T00:00:00.000Z',
      suspendedAtTurn: null,
      snapshotKey: 'workers/w1/snapshot.json',
      resumeByMechanism: null,
      autoResumeTrigger: null,
    }
    const {
      conditions: _c,
      transcriptArchive: _t,
      ...v1Body
    } = {
      ...body,
      status: 'suspended' as const,
      owner: null,
      suspension,
    }
    const v1 = {
      format: 'agent-state/worker-snapshot',
      schemaVersion: 1,
      checksum: checksumOf(v1Body),
      body: v1Body,
    }
    const decoded = decodeSnapshot(bytes(v1), 'w1')
    expect(decoded.conditions).toEqual(suspension.conditions)
    expect(decoded.suspension?.conditions).toEqual({
      hasTrigger: true,
      hasTimeout: true,
      hasOnEvent: false,
      triggerId: 't-1',
    })
    expect(JSON.stringify(decoded.suspension)).not.toContain('ghp_secret')
    expect(decoded.transcriptArchive).toEqual([])
    // The v1 checksum still guards the v1 bytes.
    const tampered = { ...v1, body: { ...v1Body, iterationsCompleted: 9 } }
    expect(codeOf(() => decodeSnapshot(bytes(tampered), 'w1'))).toBe('SNAPSHOT_CORRUPT')
  })

  it('refuses to encode a snapshot that breaks its own schema', () => {
    expect(() => encodeSnapshot({ ...body, iterationsCompleted: -1 })).toThrow()
  })
})
