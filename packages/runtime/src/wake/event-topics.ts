import { randomBytes } from 'node:crypto'
import { type Backend, type Clock, systemClock } from '@agent-state/core'
import { z } from 'zod'
import { type JsonValue, jsonByteLength, jsonValueSchema } from '../shared/canonical-json.js'
import { wakeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import { eventKey, topicWaitersPrefix } from '../shared/layout.js'
import { registerWake } from './wake-registry.js'
import { topicWaiterSchema } from './worker-wakes.js'

/** Largest event payload, as JSON bytes. */
export const MAX_EVENT_PAYLOAD_BYTES = 64 * 1024

/** An event id: its publish time in ms (13 digits, so a topic's events sort by time), `-`, 128 random bits. */
export const EVENT_ID_PATTERN = /^\d{13}-[0-9a-f]{32}$/

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })
const WRITER = { writerId: 'agent-state/events' }

/** A stored event, at `events/<topic>/<event id>`. */
export const topicEventSchema = z.strictObject({
  format: z.literal('agent-state/event'),
  schemaVersion: z.literal(1),
  topic: z.string().refine(isValidId),
  eventId: z.string().regex(EVENT_ID_PATTERN),
  /** Ms since the epoch, on the publisher's clock. */
  publishedAt: z.int().nonnegative(),
  payload: jsonValueSchema,
})
/** See {@link topicEventSchema}. */
export type TopicEvent = z.infer<typeof topicEventSchema>

/** What `publishEvent` did. */
export interface PublishedEvent {
  readonly topic: string
  readonly eventId: string
  readonly publishedAt: number
  /** The `event` wakes registered, one per worker waiting on the topic. */
  readonly wakeIds: readonly string[]
}

/** Options of {@link publishEvent}. */
export interface PublishEventOptions {
  /** Where `publishedAt` comes from (and the wakes' due time). Default `Date.now`. */
  readonly clock?: Clock
}

/** `topic` if it is a valid topic name (`ID_PATTERN`), else `INVALID_EVENT_TOPIC`. */
export function assertEventTopic(topic: unknown): string {
  if (!isValidId(topic)) {
    throw wakeError(
      'INVALID_EVENT_TOPIC',
      'An event topic is letters, digits, "_", "." and "-", starting with a letter or digit, at most 128',
      { topic: typeof topic === 'string' ? topic.slice(0, 200) : typeof topic },
    )
  }
  return topic
}

/**
 * Publishes an event on a topic (docs/runtime/wakes.md, Events). The event
 * is stored first (create-only, under a fresh time-ordered id): that is the
 * publish. Then every worker waiting on the topic (a suspension with
 * `onEvent: topic`) gets an `event` wake due now, naming the event. The
 * wakes are stored like any wake, so an event published while no dispatcher
 * runs wakes its waiters when one starts. A worker that suspends after the
 * publish is not woken by it: it waits for the next event.
 *
 * A publish that throws after storing the event may have woken some waiters
 * and not others; publishing again is safe (a worker is resumed at most
 * once per suspension, by the first of its wakes to fire).
 *
 * @throws `INVALID_EVENT_TOPIC`, `INVALID_EVENT_PAYLOAD` (not plain JSON, with
 *   `context.path`), `EVENT_PAYLOAD_TOO_LARGE`, or the backend's error.
 */
export async function publishEvent(
  backend: Backend,
  topic: string,
  payload: unknown,
  options: PublishEventOptions = {},
): Promise<PublishedEvent> {
  const clock = options.clock ?? systemClock
  const { eventId, publishedAt } = await storeEvent(backend, topic, payload, clock)
  const wakeIds: string[] = []
  const prefix = topicWaitersPrefix(topic)
  let cursor: string | undefined
  do {
    const page = await backend.list({ prefix, ...(cursor === undefined ? {} : { cursor }) })
    for (const entry of page.entries) {
      const stored = await backend.get(entry.key)
      // Removed by a resume since the listing: that worker no longer waits.
      if (stored === null) continue
      const waiter = decodeWaiter(stored.value, entry.key)
      const wake = await registerWake(backend, {
        target: { kind: 'worker', workerId: waiter.workerId },
        cause: 'event',
        dueAt: publishedAt,
        payload: { triggerId: waiter.triggerId, topic, eventId },
        clock,
      })
      wakeIds.push(wake.id)
    }
    cursor = page.cursor
  } while (cursor !== undefined)
  return { topic, eventId, publishedAt, wakeIds }
}

/**
 * Validates and stores an event create-only under a fresh time-ordered id,
 * waking nobody: the first step of {@link publishEvent}, and how a webhook
 * call's body is kept (on its trigger's own topic, which no worker waits on).
 *
 * @throws `INVALID_EVENT_TOPIC`, `INVALID_EVENT_PAYLOAD`, `EVENT_PAYLOAD_TOO_LARGE`, or the backend's error.
 */
export async function storeEvent(
  backend: Backend,
  topic: string,
  payload: unknown,
  clock: Clock,
): Promise<TopicEvent> {
  assertEventTopic(topic)
  const checked = jsonValueSchema.safeParse(payload)
  if (!checked.success || payload === undefined) {
    throw wakeError('INVALID_EVENT_PAYLOAD', 'An event payload must be a plain JSON value', {
      topic,
      path: checked.error?.issues[0]?.path.join('.') ?? '',
    })
  }
  const size = jsonByteLength(checked.data)
  if (size > MAX_EVENT_PAYLOAD_BYTES) {
    throw wakeError(
      'EVENT_PAYLOAD_TOO_LARGE',
      `An event payload of ${size} bytes exceeds ${MAX_EVENT_PAYLOAD_BYTES}`,
      { topic, size, limit: MAX_EVENT_PAYLOAD_BYTES },
    )
  }
  const publishedAt = clock()
  const eventId = `${String(publishedAt).padStart(13, '0')}-${randomBytes(16).toString('hex')}`
  const record: TopicEvent = {
    format: 'agent-state/event',
    schemaVersion: 1,
    topic,
    eventId,
    publishedAt,
    payload: checked.data as JsonValue,
  }
  await backend.put(eventKey(topic, eventId), encoder.encode(JSON.stringify(record)), {
    ifNoneMatch: '*',
    writer: WRITER,
  })
  return record
}

function decodeWaiter(bytes: Uint8Array, key: string): z.infer<typeof topicWaiterSchema> {
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(bytes))
  } catch (cause) {
    throw wakeError('EVENT_CORRUPT', `Topic waiter ${key} is not JSON`, { key }, cause)
  }
  const result = topicWaiterSchema.safeParse(parsed)
  if (!result.success || !key.endsWith(`/${result.data.workerId}`)) {
    throw wakeError('EVENT_CORRUPT', `Topic waiter ${key} fails its schema`, { key })
  }
  return result.data
}

/**
 * A stored event.
 *
 * @throws `INVALID_EVENT_TOPIC`, `EVENT_NOT_FOUND`, `EVENT_CORRUPT`.
 */
export async function getEvent(
  backend: Backend,
  topic: string,
  eventId: string,
): Promise<TopicEvent> {
  assertEventTopic(topic)
  if (typeof eventId !== 'string' || !EVENT_ID_PATTERN.test(eventId)) {
    throw wakeError('EVENT_NOT_FOUND', 'No event is stored under that id', { topic })
  }
  const key = eventKey(topic, eventId)
  const stored = await backend.get(key)
  if (stored === null) {
    throw wakeError('EVENT_NOT_FOUND', 'No event is stored under that id', { topic, eventId })
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(stored.value))
  } catch (cause) {
    throw wakeError('EVENT_CORRUPT', `Event ${key} is not JSON`, { key }, cause)
  }
  const result = topicEventSchema.safeParse(parsed)
  if (!result.success || result.data.topic !== topic || result.data.eventId !== eventId) {
    throw wakeError('EVENT_CORRUPT', `Event ${key} fails its schema`, { key })
  }
  return result.data
}
