import type { Backend, Clock } from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'
import { storeEvent } from './event-topics.js'
import { registerWake } from './wake-registry.js'
import type { WebhookTriggerRecord } from './webhook-trigger.js'
import { readWorkerWakes } from './worker-wakes.js'

/**
 * A checked webhook call made durable (docs/runtime/wakes.md, Webhooks): what
 * the endpoint does before it answers `202`. The body is stored as an event
 * on the trigger's own topic (its trigger id, which no worker waits on), then
 * a `webhook` wake due now names it; both writes are through the backend, so
 * any dispatcher over it fires the wake, exactly once, by the normal firing
 * path, whichever process received the call.
 */

/** What recording a call did. */
export type WebhookCallResult =
  /** Recorded: the wake that will resume the worker and the event holding the body. */
  | { readonly wakeId: string; readonly eventId: string }
  /** The suspension the trigger belongs to has ended (the worker was resumed, closed or parked again). */
  | 'gone'

/**
 * Records a call of `trigger` (its secret already checked) with `body`.
 * Answering `202` only after this resolves is what makes an accepted call
 * survive the endpoint's process dying right after the answer.
 *
 * Two calls of one live trigger both record a wake; the first to fire
 * resumes the worker and the other is dropped as stale (a worker is resumed
 * at most once per suspension).
 *
 * @throws `EVENT_PAYLOAD_TOO_LARGE` (the body as stored JSON over the event limit), `EVENT_CORRUPT`, or the backend's error.
 */
export async function recordWebhookCall(
  backend: Backend,
  trigger: WebhookTriggerRecord,
  body: JsonValue,
  clock: Clock,
): Promise<WebhookCallResult> {
  const registration = await readWorkerWakes(backend, trigger.workerId)
  if (registration === null || registration.triggerId !== trigger.triggerId) return 'gone'
  const event = await storeEvent(backend, trigger.triggerId, body, clock)
  const wake = await registerWake(backend, {
    target: { kind: 'worker', workerId: trigger.workerId },
    cause: 'webhook',
    dueAt: event.publishedAt,
    payload: { triggerId: trigger.triggerId, topic: trigger.triggerId, eventId: event.eventId },
    clock,
  })
  return { wakeId: wake.id, eventId: event.eventId }
}
