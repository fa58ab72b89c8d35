import { randomBytes } from 'node:crypto'
import {
  type Backend,
  type Clock,
  isAgentStateError,
  type Lease,
  systemClock,
} from '@agent-state/core'
import { z } from 'zod'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { wakeError } from '../shared/errors.js'
import {
  decodeWake,
  dueKeyOfId,
  encodeWake,
  MAX_WAKE_DUE_AT,
  MAX_WAKE_PAYLOAD_BYTES,
  recordKeyOfId,
  WAKE_CAUSES,
  WAKE_RECORD_FORMAT,
  type WakeRecord,
  wakeTargetSchema,
} from './wake-records.js'
import { indexMarker } from './wake-sweep.js'

const encoder = new TextEncoder()

/** What `registerWake` accepts; the single source of its type. */
export const registerWakeOptionsSchema = z.strictObject({
  /** The worker or daemon to wake. */
  target: wakeTargetSchema,
  cause: z.enum(WAKE_CAUSES),
  /** When the wake is due, in ms since the epoch, on the dispatchers' clock. */
  dueAt: z.int().min(0).max(MAX_WAKE_DUE_AT),
  /** Plain JSON for the handler, at most `MAX_WAKE_PAYLOAD_BYTES` as JSON. Default `null`. */
  payload: jsonValueSchema.nullable().default(null),
  /** Where `registeredAt` comes from. Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .default(() => systemClock),
})
/** See {@link registerWakeOptionsSchema}. */
export type RegisterWakeOptions = z.input<typeof registerWakeOptionsSchema>

/**
 * Stores a pending wake and its due-time marker, and returns the wake. Both
 * writes are create-only on a fresh random id, so they never meet a firing
 * lease. The record is written first: a marker always has a record, and a
 * wake becomes visible to dispatchers only once complete. A wake already due
 * (`dueAt` in the past) fires on the next tick of any dispatcher, its
 * lateness recorded.
 *
 * If the marker write fails, the record is marked cancelled (reason
 * `registration failed`) before the error is rethrown, so it never shows as
 * pending; a crash between the two writes leaves a pending record without a
 * marker, which no tick meets until `sweepWakeRegistrations` completes it
 * (docs/runtime/wakes.md, Cancel and registration). A marker found already
 * written (by that sweep) completes the registration as this write would.
 *
 * @throws `INVALID_WAKE` (with `context.path`), or the backend's error.
 */
export async function registerWake(
  backend: Backend,
  options: RegisterWakeOptions,
): Promise<WakeRecord> {
  const parsed = registerWakeOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw wakeError(
      'INVALID_WAKE',
      `Invalid wake registration at ${path || 'the options'}`,
      { path },
      parsed.error,
    )
  }
  const { target, cause, dueAt, payload, clock } = parsed.data
  const size = encoder.encode(JSON.stringify(payload)).byteLength
  if (size > MAX_WAKE_PAYLOAD_BYTES) {
    throw wakeError(
      'INVALID_WAKE',
      `A wake payload of ${size} bytes exceeds ${MAX_WAKE_PAYLOAD_BYTES}`,
      {
        path: 'payload',
        size,
      },
    )
  }
  const id = `${String(dueAt).padStart(13, '0')}-${randomBytes(16).toString('hex')}`
  const record: WakeRecord = {
    format: WAKE_RECORD_FORMAT,
    schemaVersion: 1,
    id,
    target,
    cause,
    dueAt,
    registeredAt: clock(),
    payload: payload as JsonValue | null,
    state: 'pending',
    firing: null,
    delivery: null,
    cancellation: null,
    failure: null,
  }
  const writer = { writerId: 'agent-state/wake-registry' }
  const recordMeta = await backend.put(recordKeyOfId(id), encodeWake(record), {
    ifNoneMatch: '*',
    writer,
  })
  try {
    // A marker already there was written by the sweep of interrupted
    // registrations (wake-sweep.ts), which makes this very write: either way
    // the registration is complete.
    await indexMarker(backend, id, writer)
  } catch (error) {
    const cancelled: WakeRecord = {
      ...record,
      state: 'cancelled',
      cancellation: { cancelledAt: clock(), reason: 'registration failed' },
    }
    await backend
      .put(recordKeyOfId(id), encodeWake(cancelled), { ifMatch: recordMeta.version, writer })
      .catch(() => undefined)
    throw error
  }
  return record
}

/**
 * The wake as stored.
 *
 * @throws `INVALID_WAKE_ID`, `WAKE_NOT_FOUND`, `WAKE_CORRUPT`.
 */
export async function getWake(backend: Backend, wakeId: string): Promise<WakeRecord> {
  const key = recordKeyOfId(wakeId)
  const stored = await backend.get(key)
  if (stored === null)
    throw wakeError('WAKE_NOT_FOUND', 'No wake is stored under that id', { wakeId })
  return decodeWake(stored.value, key)
}

/** Options of `cancelWake`; the single source of their type. */
export const cancelWakeOptionsSchema = z.strictObject({
  /** Stored with the cancellation. */
  reason: z.string().max(1024).default('cancelled'),
  /** How long to wait for a dispatcher's firing lease before `WAKE_BUSY`. Default 5 s. */
  waitMs: z.int().min(0).max(600_000).default(5_000),
  /** Where `cancelledAt` comes from. Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .default(() => systemClock),
  /** The lease holder name while cancelling. */
  holder: z.string().min(1).max(256).default('agent-state/wake-cancel'),
})
/** See {@link cancelWakeOptionsSchema}. */
export type CancelWakeOptions = z.input<typeof cancelWakeOptionsSchema>

const CANCEL_LEASE_TTL_MS = 30_000
const CANCEL_RETRY_MS = 25

/**
 * Cancels a pending wake and returns the wake as it ends up. Cancelling and
 * firing are decided by the same fenced compare-and-set on the index record,
 * so exactly one of them wins: the result is `cancelled`, or `fired` when a
 * dispatcher fired it first (then its handler runs or ran). Cancelling a
 * cancelled wake returns it unchanged.
 *
 * @throws `INVALID_WAKE_ID`, `WAKE_NOT_FOUND`, `WAKE_CORRUPT`, `WAKE_BUSY`
 *   (a dispatcher held the wake's lease for `waitMs`), or the backend's error.
 */
export async function cancelWake(
  backend: Backend,
  wakeId: string,
  options: CancelWakeOptions = {},
): Promise<WakeRecord> {
  const key = recordKeyOfId(wakeId)
  const parsed = cancelWakeOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw wakeError('INVALID_WAKE', `Invalid cancel options at ${path}`, { path }, parsed.error)
  }
  const { reason, waitMs, clock, holder } = parsed.data
  // Records are never deleted, so a missing one stays missing; checked before
  // the lease, which would leave a lease record on a key that holds no wake.
  // A finished record is never written again, so it is returned as read,
  // without the lease (a dispatcher leaves a delivered wake's lease to expire).
  const seen = await backend.get(key)
  if (seen === null) {
    throw wakeError('WAKE_NOT_FOUND', 'No wake is stored under that id', { wakeId })
  }
  const first = decodeWake(seen.value, key)
  if (first.state === 'cancelled' || first.state === 'failed') return first
  if (first.state === 'fired' && first.delivery?.deliveredAt != null) return first
  const lease = await acquireWaiting(backend, key, holder, waitMs, wakeId)
  try {
    const stored = await backend.get(key)
    if (stored === null)
      throw wakeError('WAKE_NOT_FOUND', 'No wake is stored under that id', { wakeId })
    const record = decodeWake(stored.value, key)
    if (record.state !== 'pending') return record
    const cancelled: WakeRecord = {
      ...record,
      state: 'cancelled',
      cancellation: { cancelledAt: clock(), reason },
    }
    await backend.put(key, encodeWake(cancelled), {
      ifMatch: stored.meta.version,
      lease,
      writer: { writerId: holder },
    })
    await unindexWake(backend, wakeId)
    return cancelled
  } finally {
    await backend.releaseLease(lease).catch(() => false)
  }
}

async function acquireWaiting(
  backend: Backend,
  key: string,
  holder: string,
  waitMs: number,
  wakeId: string,
): Promise<Lease> {
  const deadline = Date.now() + waitMs
  for (;;) {
    try {
      return await backend.acquireLease(key, { holder, ttlMs: CANCEL_LEASE_TTL_MS })
    } catch (error) {
      if (!isAgentStateError(error) || error.code !== 'LEASE_HELD') throw error
      if (Date.now() >= deadline) {
        throw wakeError('WAKE_BUSY', 'A dispatcher holds the wake; try again', { wakeId }, error)
      }
      await new Promise((resolve) => setTimeout(resolve, CANCEL_RETRY_MS))
    }
  }
}

/**
 * Deletes a finished wake's due-time marker. Only called once the record says
 * `cancelled` or delivered, which is durable, so whoever deletes it (and
 * however often) cannot lose a wake; a crash before it leaves the marker,
 * and the next tick that lists it deletes it without firing.
 */
export async function unindexWake(backend: Backend, wakeId: string): Promise<void> {
  await backend.delete(dueKeyOfId(wakeId))
}
