import type { Backend, Lease, ValueMeta } from '@agent-state/core'
import { runtimeError } from '../shared/errors.js'
import { workerSnapshotKey } from '../shared/layout.js'
import { decodeSnapshot, encodeSnapshot, type SnapshotBody } from './snapshot-codec.js'

/** A verified snapshot with the backend version it was read at. */
export interface LoadedSnapshot {
  readonly body: SnapshotBody
  readonly version: string
}

/**
 * Reads and verifies a worker's snapshot.
 *
 * @throws `SNAPSHOT_MISSING`, `SNAPSHOT_CORRUPT`, `SNAPSHOT_INCOMPATIBLE`.
 */
export async function loadSnapshot(backend: Backend, workerId: string): Promise<LoadedSnapshot> {
  const found = await backend.get(workerSnapshotKey(workerId))
  if (found === null) {
    throw runtimeError('SNAPSHOT_MISSING', `No snapshot is stored for worker ${workerId}`, {
      workerId,
    })
  }
  return { body: decodeSnapshot(found.value, workerId), version: found.meta.version }
}

/**
 * A fenced snapshot write: it lands only while `lease` is the snapshot's
 * current lease (else `LEASE_LOST` / `LEASE_HELD`) and, with `ifMatch`, only
 * over the version the writer last saw.
 */
export async function storeSnapshot(
  backend: Backend,
  body: SnapshotBody,
  lease: Lease,
  precondition: { readonly ifMatch: string } | { readonly ifNoneMatch: '*' },
): Promise<ValueMeta> {
  return backend.put(workerSnapshotKey(body.workerId), encodeSnapshot(body), {
    ...precondition,
    lease,
    writer: { writerId: lease.holder, workerId: body.workerId },
  })
}
