import { createHash } from 'node:crypto'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  closeWorker,
  inspectWorker,
  listQuarantined,
  openSession,
  quarantineRecord,
  quarantineWorkerSnapshot,
  startWorker,
} from '../src/index.js'
import { handoffKey, workerSnapshotKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'

const operator = { by: 'ops-alice', reason: 'snapshot fails its checksum after a disk fault' }

describe.each(BACKENDS)('quarantine on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  async function corruptSuspended(workerId: string): Promise<Uint8Array> {
    const backend = fixture.create()
    const worker = await startWorker(backend, { workerId, state: { balance: 10 } })
    await worker.suspend({ reason: 'pause' })
    const key = workerSnapshotKey(workerId)
    const text = new TextDecoder().decode((await backend.get(key))?.value)
    const damaged = new TextEncoder().encode(text.replace('"balance":10', '"balance":99'))
    await backend.put(key, damaged)
    return damaged
  }

  it('retires a corrupt worker snapshot without deleting its bytes, with an audit report', async () => {
    const damaged = await corruptSuspended('w1')
    const backend = fixture.create()
    expect(await codeOf(closeWorker(backend, 'w1'))).toBe('SNAPSHOT_CORRUPT')
    const report = await quarantineWorkerSnapshot(backend, 'w1', operator)
    expect(report).toMatchObject({
      _type: 'agent_state_quarantine',
      key: workerSnapshotKey('w1'),
      by: 'ops-alice',
      reason: operator.reason,
      size: damaged.byteLength,
      sha256: createHash('sha256').update(damaged).digest('hex'),
      diagnosis: { code: 'SNAPSHOT_CORRUPT' },
    })
    expect(Date.parse(report.at)).not.toBeNaN()
    expect(await backend.get(workerSnapshotKey('w1'))).toBeNull()
    expect(await codeOf(inspectWorker(backend, 'w1'))).toBe('SNAPSHOT_MISSING')
    const kept = await backend.get(report.recordKey)
    // Some backends hand out a Buffer: compare the bytes, not the class.
    expect(new Uint8Array(kept?.value ?? [])).toEqual(damaged)
    const listed = await listQuarantined(fixture.create())
    expect(listed).toEqual([{ quarantineId: report.quarantineId, report, problem: null }])
  })

  it('refuses a healthy snapshot, a live owner, and a missing or unexplained request', async () => {
    const backend = fixture.create()
    const healthy = await startWorker(backend, { workerId: 'ok' })
    await healthy.suspend({ reason: 'pause' })
    const before = await backend.head(workerSnapshotKey('ok'))
    expect(await codeOf(quarantineWorkerSnapshot(backend, 'ok', operator))).toBe(
      'SNAPSHOT_NOT_CORRUPT',
    )
    expect((await backend.head(workerSnapshotKey('ok')))?.version).toBe(before?.version)

    // A running worker holds its snapshot's lease: the move is fenced out.
    const running = await startWorker(backend, { workerId: 'live' })
    const lease = running.lease
    if (lease === null) throw new Error('a running worker holds its lease')
    await backend.put(workerSnapshotKey('live'), new TextEncoder().encode('garbage'), { lease })
    expect(await codeOf(quarantineWorkerSnapshot(backend, 'live', operator))).toBe('LEASE_HELD')
    expect(new TextDecoder().decode((await backend.get(workerSnapshotKey('live')))?.value)).toBe(
      'garbage',
    )

    await corruptSuspended('w2')
    expect(
      await codeOf(quarantineWorkerSnapshot(backend, 'w2', { ...operator, reason: ' ' })),
    ).toBe('INVALID_ARGUMENT')
    expect(await codeOf(quarantineWorkerSnapshot(backend, 'w2', { by: '', reason: 'r' }))).toBe(
      'INVALID_ARGUMENT',
    )
    expect(await codeOf(quarantineRecord(backend, 'no/such/key', operator))).toBe('NOT_FOUND')
    expect(await codeOf(quarantineWorkerSnapshot(backend, 'nobody', operator))).toBe(
      'SNAPSHOT_MISSING',
    )
    expect(await listQuarantined(backend)).toEqual([])
  })

  it('quarantines any record, such as a corrupt handoff', async () => {
    const backend = fixture.create()
    const session = await openSession(backend, { sessionId: 's', writer: 'w' })
    await backend.put(handoffKey('s'), new TextEncoder().encode('{"not":"an envelope"}'))
    expect(await codeOf(session.readHandoff())).toBe('HANDOFF_CORRUPT')
    const report = await quarantineRecord(backend, handoffKey('s'), {
      by: 'ops',
      reason: 'unreadable handoff',
    })
    expect(report.diagnosis).toBeNull()
    expect(await session.readHandoff()).toBeNull()
    expect(new TextDecoder().decode((await backend.get(report.recordKey))?.value)).toBe(
      '{"not":"an envelope"}',
    )
    expect(await codeOf(quarantineRecord(backend, report.recordKey, operator))).toBe(
      'INVALID_ARGUMENT',
    )
  })
})
