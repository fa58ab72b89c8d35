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
import { wakeDoneKey } from '../shared/layout.js'
import {
  decodeWake,
  doneKeyOfId,
  dueKeyOfId,
  encodeWake,
  MAX_WAKE_DUE_AT,
  MAX_WAKE_PAYLOAD_BYTES,
  WAKE_CAUSES,
  WAKE_RECORD_FORMAT,
  type WakeRecord,
  wakeTargetSchema,
} from './wake-records.js'

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
 * Stores a pending wake under the due-time index and returns it. The write is
 * create-only on a fresh random id, so it never meets a firing lease. A wake
 * already due (`dueAt` in the past) is stored all the same and fires on the
 * next tick of any dispatcher, its lateness recorded.
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
  }
  await backend.put(dueKeyOfId(id), encodeWake(record), {
    ifNoneMatch: '*',
    writer: { writerId: 'agent-state/wake-registry' },
  })
  return record
}

/**
 * The wake as stored: under the index while unfinished, else in the archive.
 *
 * @throws `INVALID_WAKE_ID`, `WAKE_NOT_FOUND`, `WAKE_CORRUPT`.
 */
export async function getWake(backend: Backend, wakeId: string): Promise<WakeRecord> {
  const dueKey = dueKeyOfId(wakeId)
  const indexed = await backend.get(dueKey)
  if (indexed !== null) return decodeWake(indexed.value, dueKey)
  const doneKey = doneKeyOfId(wakeId)
  const done = await backend.get(doneKey)
  if (done !== null) return decodeWake(done.value, doneKey)
  throw wakeError('WAKE_NOT_FOUND', 'No wake is stored under that id', { wakeId })
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
  const dueKey = dueKeyOfId(wakeId)
  const parsed = cancelWakeOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw wakeError('INVALID_WAKE', `Invalid cancel options at ${path}`, { path }, parsed.error)
  }
  const { reason, waitMs, clock, holder } = parsed.data
  const lease = await acquireWaiting(backend, dueKey, holder, waitMs, wakeId)
  try {
    const stored = await backend.get(dueKey)
    if (stored === null) return await getWake(backend, wakeId)
    const record = decodeWake(stored.value, dueKey)
    if (record.state !== 'pending') return record
    const cancelled: WakeRecord = {
      ...record,
      state: 'cancelled',
      cancellation: { cancelledAt: clock(), reason },
    }
    const writer = { writerId: holder }
    const meta = await backend.put(dueKey, encodeWake(cancelled), {
      ifMatch: stored.meta.version,
      lease,
      writer,
    })
    await archiveWake(backend, cancelled, dueKey, meta.version, lease, writer)
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
 * Moves a finished wake (delivered or cancelled) out of the index: a
 * create-only copy in the archive (an existing copy from an earlier attempt
 * is kept), then a fenced, conditional delete of the index record. A crash
 * between the two leaves the finished record in the index, where the next
 * tick finishes the move without firing it.
 */
export async function archiveWake(
  backend: Backend,
  record: WakeRecord,
  dueKey: string,
  version: string,
  lease: Lease,
  writer: { readonly writerId: string },
): Promise<void> {
  try {
    await backend.put(wakeDoneKey(record.id), encodeWake(record), { ifNoneMatch: '*', writer })
  } catch (error) {
    if (!isAgentStateError(error) || error.code !== 'PRECONDITION_FAILED') throw error
  }
  await backend.delete(dueKey, { ifMatch: version, lease })
}
