import { createHash } from 'node:crypto'
import {
  AgentStateError,
  assertValidKey,
  type Backend,
  type Clock,
  isAgentStateError,
  systemClock,
  walkList,
} from '@agent-state/core'
import { z } from 'zod'
import { runtimeError } from '../shared/errors.js'
import { assertWorkerId, uuidv7 } from '../shared/ids.js'
import { QUARANTINE_PREFIX, workerSnapshotKey } from '../shared/layout.js'
import { releaseQuietly } from '../shared/owned-lease.js'
import { loadSnapshot } from './snapshot-store.js'

/** Options of {@link quarantineRecord} and {@link quarantineWorkerSnapshot}. */
export interface QuarantineOptions {
  /** Who decides (an operator id), recorded in the report; 1 to 256 characters. */
  readonly by: string
  /** Why, recorded in the report; must not be empty. */
  readonly reason: string
  /** Clock for the report's time and the quarantine id. Default `Date.now`. */
  readonly clock?: Clock
  /** TTL of the lease held while moving the record. Default 60 s. */
  readonly leaseTtlMs?: number
}

/** The audit record of one quarantine, stored at `quarantine/<id>/report.json`. */
export const quarantineReportSchema = z.strictObject({
  _type: z.literal('agent_state_quarantine'),
  version: z.literal(1),
  quarantineId: z.string(),
  /** Where the record was. */
  key: z.string(),
  /** Its backend version when it was moved. */
  movedVersion: z.string(),
  size: z.int().nonnegative(),
  /** SHA-256 of the moved bytes, so the copy can be checked against the report. */
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  /** The original's last writer id, or `null`. */
  writerId: z.string().nullable(),
  by: z.string(),
  reason: z.string(),
  /** RFC 3339. */
  at: z.iso.datetime(),
  /** The error that made the record unreadable, when the runtime diagnosed it. */
  diagnosis: z.strictObject({ code: z.string(), message: z.string() }).nullable(),
  /** Where the damaged bytes are now, unchanged. */
  recordKey: z.string(),
  /** Where this report is. */
  reportKey: z.string(),
})

/** See {@link quarantineReportSchema}. */
export type QuarantineReport = z.infer<typeof quarantineReportSchema>

const recordKeyOf = (id: string) => `${QUARANTINE_PREFIX}${id}/record`
const reportKeyOf = (id: string) => `${QUARANTINE_PREFIX}${id}/report.json`

function checkOptions(options: QuarantineOptions): void {
  const { by, reason } = options ?? ({} as QuarantineOptions)
  if (typeof by !== 'string' || by.trim() === '' || by.length > 256) {
    throw new AgentStateError('INVALID_ARGUMENT', 'quarantine needs `by`: 1 to 256 characters')
  }
  if (typeof reason !== 'string' || reason.trim() === '') {
    throw new AgentStateError('INVALID_ARGUMENT', 'quarantine needs a non-empty `reason`')
  }
}

const sameBytes = (a: Uint8Array, b: Uint8Array) =>
  a.byteLength === b.byteLength && a.every((byte, i) => byte === b[i])

/**
 * Moves a record out of the way without ever deleting its bytes, for an
 * explicit, audited decision about a record the runtime cannot read. Under
 * the key's lease (so no owner writes meanwhile; a live lease is
 * `LEASE_HELD`, retry once it expires): copies the exact bytes to
 * `quarantine/<id>/record` (create-only), writes the report
 * (who, when, why, the original version, size and SHA-256) to
 * `quarantine/<id>/report.json`, reads the copy back and compares it, and
 * only then deletes the original, fenced by the lease and conditional on the
 * version that was copied. If any step fails, the original stays in place.
 *
 * A record the backend itself refuses to return (the backend's `CORRUPT`:
 * its own integrity check failed) cannot be copied through the contract:
 * that error is passed on, and the backend's own recovery applies.
 *
 * @throws `INVALID_KEY`, `INVALID_ARGUMENT`, `NOT_FOUND` (no record),
 *   `LEASE_HELD`, `PRECONDITION_FAILED` (the record changed meanwhile;
 *   the copy and report stay, the original is untouched), backend errors.
 */
export async function quarantineRecord(
  backend: Backend,
  key: string,
  options: QuarantineOptions,
  diagnosis: { readonly code: string; readonly message: string } | null = null,
): Promise<QuarantineReport> {
  assertValidKey(key, backend.capabilities.maxKeyBytes)
  checkOptions(options)
  if (key.startsWith(QUARANTINE_PREFIX)) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      'A quarantined record cannot be quarantined again',
    )
  }
  const clock = options.clock ?? systemClock
  const lease = await backend.acquireLease(key, {
    holder: `quarantine:${options.by}`.slice(0, 256),
    ttlMs: options.leaseTtlMs ?? 60_000,
  })
  try {
    const found = await backend.get(key)
    if (found === null) {
      throw new AgentStateError('NOT_FOUND', 'There is no record to quarantine at this key', {
        context: { key },
      })
    }
    const now = clock()
    const quarantineId = uuidv7(now)
    const report: QuarantineReport = {
      _type: 'agent_state_quarantine',
      version: 1,
      quarantineId,
      key,
      movedVersion: found.meta.version,
      size: found.value.byteLength,
      sha256: createHash('sha256').update(found.value).digest('hex'),
      writerId: found.meta.writer?.writerId ?? null,
      by: options.by,
      reason: options.reason.trim(),
      at: new Date(now).toISOString(),
      diagnosis,
      recordKey: recordKeyOf(quarantineId),
      reportKey: reportKeyOf(quarantineId),
    }
    const writer = { writerId: options.by.slice(0, 256) }
    await backend.put(report.recordKey, found.value, { ifNoneMatch: '*', writer })
    await backend.put(report.reportKey, new TextEncoder().encode(JSON.stringify(report)), {
      ifNoneMatch: '*',
      writer,
    })
    const copy = await backend.get(report.recordKey)
    if (copy === null || !sameBytes(copy.value, found.value)) {
      throw new AgentStateError(
        'INDETERMINATE',
        'The quarantine copy does not read back identical; the original was left in place',
        { context: { key, recordKey: report.recordKey } },
      )
    }
    await backend.delete(key, { ifMatch: found.meta.version, lease })
    return report
  } finally {
    await releaseQuietly(backend, lease)
  }
}

/**
 * Retires a worker snapshot the runtime cannot read (`SNAPSHOT_CORRUPT` or
 * `SNAPSHOT_INCOMPATIBLE`), which `closeWorker` cannot close: quarantines it
 * with {@link quarantineRecord}, recording the diagnosis. Afterwards the
 * worker has no snapshot (`SNAPSHOT_MISSING`). A snapshot that verifies is
 * refused with `SNAPSHOT_NOT_CORRUPT`: retire it with `closeWorker`.
 *
 * @throws `SNAPSHOT_NOT_CORRUPT`, `SNAPSHOT_MISSING`, and what
 *   {@link quarantineRecord} throws.
 */
export async function quarantineWorkerSnapshot(
  backend: Backend,
  workerId: string,
  options: QuarantineOptions,
): Promise<QuarantineReport> {
  assertWorkerId(workerId)
  checkOptions(options)
  let diagnosis: { code: string; message: string }
  try {
    await loadSnapshot(backend, workerId)
    throw runtimeError(
      'SNAPSHOT_NOT_CORRUPT',
      `The snapshot of worker ${workerId} verifies; retire it with closeWorker`,
      { workerId },
    )
  } catch (error) {
    if (
      !isAgentStateError(error, 'SNAPSHOT_CORRUPT') &&
      !isAgentStateError(error, 'SNAPSHOT_INCOMPATIBLE')
    ) {
      throw error
    }
    diagnosis = { code: error.code, message: error.message }
  }
  return quarantineRecord(backend, workerSnapshotKey(workerId), options, diagnosis)
}

/** One quarantine in {@link listQuarantined}. */
export interface QuarantineEntry {
  readonly quarantineId: string
  /** The report, or `null` when it is missing or unreadable (then `problem` says which). */
  readonly report: QuarantineReport | null
  readonly problem: string | null
}

/**
 * Every quarantine in the backend, oldest first (ids are UUIDv7). A missing
 * or unreadable report does not hide the others: its entry says so.
 */
export async function listQuarantined(backend: Backend): Promise<QuarantineEntry[]> {
  const ids: string[] = []
  for await (const page of walkList(backend, { prefix: QUARANTINE_PREFIX, delimiter: '/' })) {
    for (const group of page.prefixes ?? []) {
      ids.push(group.slice(QUARANTINE_PREFIX.length, -1))
    }
  }
  const entries: QuarantineEntry[] = []
  for (const quarantineId of ids) {
    const key = reportKeyOf(quarantineId)
    let found: Awaited<ReturnType<Backend['get']>>
    try {
      found = await backend.get(key)
    } catch (error) {
      if (!isAgentStateError(error, 'CORRUPT')) throw error
      entries.push({ quarantineId, report: null, problem: `report ${key} is corrupt` })
      continue
    }
    if (found === null) {
      // The copy landed but the report write did not: the bytes are there, unexplained.
      entries.push({ quarantineId, report: null, problem: `report ${key} is missing` })
      continue
    }
    let parsed: ReturnType<typeof quarantineReportSchema.safeParse> | undefined
    try {
      parsed = quarantineReportSchema.safeParse(JSON.parse(new TextDecoder().decode(found.value)))
    } catch {
      parsed = undefined
    }
    entries.push(
      parsed?.success === true
        ? { quarantineId, report: parsed.data, problem: null }
        : { quarantineId, report: null, problem: `report ${key} is unreadable` },
    )
  }
  return entries
}
