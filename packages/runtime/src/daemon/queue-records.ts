import { z } from 'zod'
import { jsonValueSchema } from '../shared/canonical-json.js'
import { daemonError } from '../shared/errors.js'

/**
 * The records of one daemon queue. Each is small and has one writer role, so
 * every operation touches a constant number of them:
 * - config (`daemon.json`): written once, create-only;
 * - tail (`tail.json`): producers compare-and-set it to allocate the next
 *   sequence numbers; it also carries the events of that write themselves
 *   (the newest, and the earlier ones of a batch), so allocating numbers and
 *   storing their events are one atomic write;
 * - head (`head.json`): written only under the delivery lease (fenced), by
 *   the consumer that claims and acknowledges;
 * - events (`events/<seq>`): every queued event except possibly those of the
 *   latest write, copied out of the tail record by the next producer before it
 *   replaces it.
 */

/** Default `capacity` (docs/runtime/daemons.md). */
export const DEFAULT_QUEUE_CAPACITY = 1024
/** Largest capacity accepted; more is a configuration mistake, not a queue. */
export const MAX_QUEUE_CAPACITY = 1_000_000
/** Default largest event, as canonical JSON bytes. */
export const DEFAULT_MAX_EVENT_BYTES = 64 * 1024
/** Largest `maxEventBytes` accepted. */
export const MAX_EVENT_BYTES_LIMIT = 1024 * 1024

/** Options of a new daemon queue; the single source of their types. */
export const daemonQueueOptionsSchema = z.strictObject({
  /** Events the queue may hold, pending plus in flight. Default 1024. */
  capacity: z.int().min(1).max(MAX_QUEUE_CAPACITY).default(DEFAULT_QUEUE_CAPACITY),
  /** Largest event as JSON bytes. Default 64 KiB, at most 1 MiB. */
  maxEventBytes: z.int().min(16).max(MAX_EVENT_BYTES_LIMIT).default(DEFAULT_MAX_EVENT_BYTES),
  /** The wake-up interval in ms: `spawnDaemon` registers the interval wakes (docs/runtime/wakes.md, Daemon wakes). */
  wakeIntervalMs: z.int().positive().nullable().default(null),
  /** Key prefixes whose changes wake the daemon (`watchDaemonPaths`; docs/runtime/wakes.md, Daemon wakes). */
  watchPaths: z.array(z.string().min(1).max(4096)).max(256).default([]),
  /**
   * How the queue's operations run (docs/runtime/daemons.md, "Queue paths"):
   * `generic` (default) composes Backend calls, `native` uses the backend's
   * `nativeQueue` capability (`QUEUE_PATH_UNAVAILABLE` without it), `auto`
   * is `native` when the backend has the capability. Recorded at creation.
   */
  path: z.enum(['generic', 'native', 'auto']).default('generic'),
})

/** What `createDaemonQueue` accepts (every field optional). */
export type DaemonQueueOptions = z.input<typeof daemonQueueOptionsSchema>

const CONFIG_FORMAT = 'agent-state/daemon-queue'
const HEAD_FORMAT = 'agent-state/daemon-head'
const TAIL_FORMAT = 'agent-state/daemon-tail'
const EVENT_FORMAT = 'agent-state/daemon-event'

const seqSchema = z.int().nonnegative()

/** The stored configuration of a queue. */
export const queueConfigSchema = z.strictObject({
  format: z.literal(CONFIG_FORMAT),
  schemaVersion: z.literal(1),
  daemonId: z.string(),
  capacity: z.int().min(1).max(MAX_QUEUE_CAPACITY),
  maxEventBytes: z.int().min(16).max(MAX_EVENT_BYTES_LIMIT),
  wakeIntervalMs: z.int().positive().nullable(),
  watchPaths: z.array(z.string()),
  createdAt: z.iso.datetime(),
  /**
   * `native` for a queue created on the native path; absent for the generic
   * path (so queues of earlier versions read unchanged, and a runtime that
   * predates the native path refuses a native queue as `QUEUE_CORRUPT`
   * instead of writing it generically).
   */
  path: z.literal('native').optional(),
})
/** See {@link queueConfigSchema}. */
export type QueueConfig = z.infer<typeof queueConfigSchema>

/** One queued event as stored. */
export const eventRecordSchema = z.strictObject({
  format: z.literal(EVENT_FORMAT),
  seq: seqSchema,
  /** Random id chosen by the producer, unique per trigger call. */
  eventId: z.string(),
  event: jsonValueSchema,
  triggeredAt: z.iso.datetime(),
})
/** See {@link eventRecordSchema}. */
export type EventRecord = z.infer<typeof eventRecordSchema>

/** The producer side of the queue. */
export const tailRecordSchema = z.strictObject({
  format: z.literal(TAIL_FORMAT),
  /** The sequence number the next trigger gets; the queue holds `[head, next)`. */
  next: seqSchema,
  /** The newest event (sequence `next - 1`), or `null` before the first trigger. */
  last: eventRecordSchema.nullable(),
  /**
   * The other events of the write that stored `last` when it stored several (a
   * `triggerMany` batch, or triggers combined in one process), in sequence order,
   * ending at `next - 2`. Absent after a write of one event.
   */
  earlier: z.array(eventRecordSchema).optional(),
})
/** See {@link tailRecordSchema}. */
export type TailRecord = z.infer<typeof tailRecordSchema>

/** The consumer side of the queue. */
export const headRecordSchema = z.strictObject({
  format: z.literal(HEAD_FORMAT),
  /** Sequence number of the oldest unacknowledged event. */
  head: seqSchema,
  /** How many times the event at `head` has been handed out. */
  attempts: z.int().nonnegative(),
  /** Acknowledged events so far: the daemon's total iterations. */
  iterations: z.int().nonnegative(),
  /** The latest claim of the head event; live only while the head record's lease is. */
  claim: z
    .strictObject({
      seq: seqSchema,
      holder: z.string(),
      token: z.int().positive(),
      claimedAt: z.iso.datetime(),
    })
    .nullable(),
})
/** See {@link headRecordSchema}. */
export type HeadRecord = z.infer<typeof headRecordSchema>

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** Serialises a record. */
export function encodeRecord(
  record: QueueConfig | EventRecord | TailRecord | HeadRecord,
): Uint8Array {
  return encoder.encode(JSON.stringify(record))
}

/** Parses and validates a stored record; anything else is `QUEUE_CORRUPT`, never empty. */
export function decodeRecord<T>(
  schema: z.ZodType<T>,
  bytes: Uint8Array,
  context: { readonly daemonId: string; readonly key: string },
): T {
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(bytes))
  } catch (cause) {
    throw daemonError('QUEUE_CORRUPT', `Queue record ${context.key} is not JSON`, context, cause)
  }
  const result = schema.safeParse(parsed)
  if (!result.success) {
    throw daemonError(
      'QUEUE_CORRUPT',
      `Queue record ${context.key} fails its schema`,
      { ...context, path: result.error.issues[0]?.path.join('.') ?? '' },
      result.error,
    )
  }
  return result.data
}

/** The format tags, for building records. */
export const RECORD_FORMATS = {
  config: CONFIG_FORMAT,
  head: HEAD_FORMAT,
  tail: TAIL_FORMAT,
  event: EVENT_FORMAT,
} as const
