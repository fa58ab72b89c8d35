import { z } from 'zod'
import { jsonValueSchema } from '../shared/canonical-json.js'
import { wakeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import { wakeDueKey, wakeRecordKey } from '../shared/layout.js'

/**
 * The wake record (docs/runtime/wakes.md). One record per wake at
 * `wakes/records/<id>`, kept once the wake finishes; an empty marker at
 * `wakes/due/<bucket>/<id>` indexes it by due time while it is unfinished.
 * The record's lease is the firing lease: every write of the record after its
 * creation is fenced by it and conditional on the version read.
 */

/** What may cause a wake. */
export const WAKE_CAUSES = ['timeout', 'event', 'schedule', 'webhook', 'interval'] as const
/** What caused a wake. */
export type WakeCause = (typeof WAKE_CAUSES)[number]

/**
 * The states of a wake: `pending` until one dispatcher fires it or a caller
 * cancels it; a `fired` wake whose handler kept failing ends `failed` (see
 * {@link wakeFailureSchema}).
 */
export const WAKE_STATES = ['pending', 'fired', 'cancelled', 'failed'] as const
/** See {@link WAKE_STATES}. */
export type WakeState = (typeof WAKE_STATES)[number]

/** Largest due time accepted: the 13 digits of a wake id (year 2286). */
export const MAX_WAKE_DUE_AT = 9_999_999_999_999
/** Largest payload, as JSON bytes: a wake names what woke, the data stays in its own records. */
export const MAX_WAKE_PAYLOAD_BYTES = 16 * 1024

/** A wake id: the due time in ms (13 digits, so ids sort by due time within a bucket), `-`, 128 random bits. */
export const WAKE_ID_PATTERN = /^(\d{13})-[0-9a-f]{32}$/

const WAKE_FORMAT = 'agent-state/wake'

const targetIdSchema = z.string().refine(isValidId, 'not a valid id (ID_PATTERN)')

/** Who a wake wakes: a worker (resumed) or a daemon (an event in its queue). */
export const wakeTargetSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('worker'), workerId: targetIdSchema }),
  z.strictObject({ kind: z.literal('daemon'), daemonId: targetIdSchema }),
])
/** See {@link wakeTargetSchema}. */
export type WakeTarget = z.infer<typeof wakeTargetSchema>

const msSchema = z.int().min(0).max(MAX_WAKE_DUE_AT)

/** The one firing decision of a wake, written by compare-and-set under the firing lease. */
export const wakeFiringSchema = z.strictObject({
  /** The dispatcher that fired it. */
  dispatcher: z.string().min(1).max(256),
  /** The fencing token of the firing lease the decision was written under. */
  token: z.int().positive(),
  /** When it fired, on the firing dispatcher's clock. */
  firedAt: msSchema,
  /** `firedAt - dueAt`, never negative: how late the wake fired. */
  latenessMs: z.int().min(0),
})
/** See {@link wakeFiringSchema}. */
export type WakeFiring = z.infer<typeof wakeFiringSchema>

/** The handler calls of a fired wake (at-least-once: each attempt is counted before the call). */
export const wakeDeliverySchema = z.strictObject({
  attempts: z.int().positive(),
  /** When a handler call returned, or `null` while none has. */
  deliveredAt: msSchema.nullable(),
})
/** See {@link wakeDeliverySchema}. */
export type WakeDelivery = z.infer<typeof wakeDeliverySchema>

/**
 * Why a fired wake was given up: its handler failed with a non-retryable
 * error on attempt `attempts`, at or past the dispatcher's `maxAttempts` (a
 * payload the handler cannot read, a handler that keeps throwing). The wake
 * is never handed out again; the record keeps the last error for operators.
 */
export const wakeFailureSchema = z.strictObject({
  /** When the dispatcher gave up, on its clock. */
  failedAt: msSchema,
  /** The handler calls made, the failing one included. */
  attempts: z.int().positive(),
  /** The last error's code (`AgentStateError`), or `null` for another error. */
  code: z.string().max(200).nullable(),
  /** The last error's message, cut to 1024 characters. */
  message: z.string().max(1024),
  /** Whether the target worker's audit trail got a `wake_failed` entry (`false`: no readable worker, or a daemon). */
  audited: z.boolean(),
})
/** See {@link wakeFailureSchema}. */
export type WakeFailure = z.infer<typeof wakeFailureSchema>

/** A stored wake. */
export const wakeRecordSchema = z
  .strictObject({
    format: z.literal(WAKE_FORMAT),
    schemaVersion: z.literal(1),
    id: z.string().regex(WAKE_ID_PATTERN),
    target: wakeTargetSchema,
    cause: z.enum(WAKE_CAUSES),
    dueAt: msSchema,
    registeredAt: msSchema,
    /** Plain JSON handed to the handler (an event name, a schedule occurrence), or `null`. */
    payload: jsonValueSchema.nullable(),
    state: z.enum(WAKE_STATES),
    firing: wakeFiringSchema.nullable(),
    delivery: wakeDeliverySchema.nullable(),
    cancellation: z
      .strictObject({ cancelledAt: msSchema, reason: z.string().max(1024) })
      .nullable(),
    /** Set once, when a fired wake is given up (`failed`). Absent in records written before it existed. */
    failure: wakeFailureSchema.nullable().default(null),
  })
  .superRefine((record, ctx) => {
    // The state and its fields agree, and the id's due time is the record's.
    const failed = record.state === 'failed'
    const fired = record.state === 'fired' || failed
    const cancelled = record.state === 'cancelled'
    if ((record.failure !== null) !== failed) {
      ctx.addIssue({
        code: 'custom',
        path: ['failure'],
        message: `failure contradicts state ${record.state}`,
      })
    }
    if ((record.firing !== null) !== fired || (record.delivery !== null) !== fired) {
      ctx.addIssue({
        code: 'custom',
        path: ['firing'],
        message: `firing and delivery contradict state ${record.state}`,
      })
    }
    if ((record.cancellation !== null) !== cancelled) {
      ctx.addIssue({
        code: 'custom',
        path: ['cancellation'],
        message: `cancellation contradicts state ${record.state}`,
      })
    }
    if (Number(WAKE_ID_PATTERN.exec(record.id)?.[1]) !== record.dueAt) {
      ctx.addIssue({ code: 'custom', path: ['dueAt'], message: 'dueAt differs from the id' })
    }
  })
/** See {@link wakeRecordSchema}. */
export type WakeRecord = z.infer<typeof wakeRecordSchema>

/** A fired wake as a handler gets it: `id` is the key to deduplicate on (delivery is at-least-once). */
export type FiredWake = WakeRecord & {
  readonly state: 'fired'
  readonly failure: null
  readonly firing: WakeFiring
  readonly delivery: WakeDelivery
}

/** The due time an id carries; `INVALID_WAKE_ID` for anything that is not a wake id. */
export function dueAtOfId(wakeId: unknown): number {
  const match = typeof wakeId === 'string' ? WAKE_ID_PATTERN.exec(wakeId) : null
  if (match === null) {
    throw wakeError(
      'INVALID_WAKE_ID',
      'Invalid wake id: expected <13-digit due ms>-<32 hex digits>',
      {
        wakeId: typeof wakeId === 'string' ? wakeId.slice(0, 200) : typeof wakeId,
      },
    )
  }
  return Number(match[1])
}

/** The index marker key of a wake id (its bucket is derived from the due time the id carries). */
export function dueKeyOfId(wakeId: string): string {
  return wakeDueKey(wakeId, dueAtOfId(wakeId))
}

/** The record key of a wake id. */
export function recordKeyOfId(wakeId: string): string {
  dueAtOfId(wakeId)
  return wakeRecordKey(wakeId)
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** Serialises a wake record. */
export function encodeWake(record: WakeRecord): Uint8Array {
  return encoder.encode(JSON.stringify(record))
}

/**
 * Parses and validates a stored wake; anything else is `WAKE_CORRUPT`, never
 * skipped: a record that is not JSON, fails its schema, or sits under a key
 * its id does not name (a copy gone wrong) stops the caller.
 */
export function decodeWake(bytes: Uint8Array, key: string): WakeRecord {
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(bytes))
  } catch (cause) {
    throw wakeError('WAKE_CORRUPT', `Wake record ${key} is not JSON`, { key }, cause)
  }
  const result = wakeRecordSchema.safeParse(parsed)
  if (!result.success) {
    throw wakeError(
      'WAKE_CORRUPT',
      `Wake record ${key} fails its schema`,
      { key, path: result.error.issues[0]?.path.join('.') ?? '' },
      result.error,
    )
  }
  const record = result.data
  if (key !== wakeRecordKey(record.id)) {
    throw wakeError('WAKE_CORRUPT', `Wake record ${key} holds wake ${record.id}`, {
      key,
      wakeId: record.id,
    })
  }
  return record
}

/** The format tag, for building records. */
export const WAKE_RECORD_FORMAT = WAKE_FORMAT
