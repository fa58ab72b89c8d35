import { type Backend, isAgentStateError, type WriterIdentity } from '@agent-state/core'
import { z } from 'zod'
import { wakeError } from '../shared/errors.js'
import { WAKES_RECORDS_PREFIX } from '../shared/layout.js'
import { decodeWake, dueKeyOfId } from './wake-records.js'

/**
 * The sweep of interrupted registrations (docs/runtime/wakes.md, Cancel and
 * registration). `registerWake` writes the record, then the marker; a
 * registrant killed between the two leaves a `pending` record that no tick
 * meets. The sweep completes such a registration rather than cancelling it:
 * it writes the missing marker (create-only), exactly the write the
 * registrant would have made, so it never races one that is merely slow
 * (whichever marker write lands first completes the registration, and
 * `registerWake` takes an existing marker as its own). The wake then fires,
 * late, like any wake registered while no dispatcher ran; the runtime's
 * handlers drop the ones whose registrant died before using them (a worker
 * that never parked under the trigger, an interval wake never named).
 */

const WRITER = { writerId: 'agent-state/wake-sweep' }

/** Options of `sweepWakeRegistrations`; the single source of their types. */
export const sweepWakeRegistrationsOptionsSchema = z.strictObject({
  /** Records read per call, at most. Default 1000. */
  limit: z.int().min(1).max(100_000).default(1_000),
  /** Where to go on: the `cursor` of the previous call's result. Default the first record. */
  cursor: z.string().min(1).optional(),
})
/** See {@link sweepWakeRegistrationsOptionsSchema}. */
export type SweepWakeRegistrationsOptions = z.input<typeof sweepWakeRegistrationsOptionsSchema>

/** What one sweep call did. */
export interface SweepWakeRegistrationsResult {
  /** Records read. */
  readonly scanned: number
  /** Ids of the pending wakes whose marker was missing and is now written. */
  readonly completed: readonly string[]
  /** Records that could not be read (`WAKE_CORRUPT`), by key; left as they are. */
  readonly errors: ReadonlyArray<{ readonly key: string; readonly error: unknown }>
  /** Pass it back to go on; absent once every record was read. */
  readonly cursor?: string
}

/**
 * Reads up to `limit` wake records in id order (so in due order) and writes
 * the missing marker of every `pending` one, completing registrations a
 * crash interrupted. Cost: one listing page and one read per record, plus a
 * create-only marker write per pending record (refused, and counted nowhere,
 * where the marker exists). Records are kept after they finish, so a full
 * sweep reads them all: run it as maintenance (after a crash, or on a
 * schedule), page by page with `cursor`, never on a tick.
 *
 * @throws `INVALID_WAKE` for bad options, or the backend's error.
 */
export async function sweepWakeRegistrations(
  backend: Backend,
  options: SweepWakeRegistrationsOptions = {},
): Promise<SweepWakeRegistrationsResult> {
  const parsed = sweepWakeRegistrationsOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw wakeError('INVALID_WAKE', `Invalid sweep options at ${path}`, { path }, parsed.error)
  }
  const { limit, cursor } = parsed.data
  const page = await backend.list({
    prefix: WAKES_RECORDS_PREFIX,
    limit: Math.min(limit, 10_000),
    ...(cursor === undefined ? {} : { cursor }),
  })
  const completed: string[] = []
  const errors: Array<{ key: string; error: unknown }> = []
  for (const entry of page.entries) {
    const stored = await backend.get(entry.key)
    if (stored === null) continue
    let pendingId: string
    try {
      const record = decodeWake(stored.value, entry.key)
      if (record.state !== 'pending') continue
      pendingId = record.id
    } catch (error) {
      errors.push({ key: entry.key, error })
      continue
    }
    if (await indexMarker(backend, pendingId)) completed.push(pendingId)
  }
  return {
    scanned: page.entries.length,
    completed,
    errors,
    ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
  }
}

/**
 * Writes a wake's marker create-only: `true` when this call wrote it,
 * `false` when it was there already. Shared by `registerWake` and the sweep,
 * so both make the same write and the first one wins.
 */
export async function indexMarker(
  backend: Backend,
  wakeId: string,
  writer: WriterIdentity = WRITER,
): Promise<boolean> {
  try {
    await backend.put(dueKeyOfId(wakeId), new Uint8Array(0), { ifNoneMatch: '*', writer })
    return true
  } catch (error) {
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) return false
    throw error
  }
}
