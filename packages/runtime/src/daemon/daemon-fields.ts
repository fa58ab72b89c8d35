import type { JsonValue } from '../shared/canonical-json.js'
import type { DaemonQueue } from './daemon-queue.js'
import type { Delivery } from './delivery.js'

/**
 * The daemon fields, kept in the worker snapshot's free-form state
 * (`state.daemon`, beside the application's `state.app`) and refreshed on
 * spawn, on every `ack` that carries an update, and on `stop`.
 */
export interface DaemonFields {
  readonly pendingEventCount: number
  readonly queuedEventCount: number
  readonly inflightEvent: { readonly seq: number; readonly attempt: number } | null
  readonly wakeIntervalMs: number | null
  readonly watchPaths: readonly string[]
  readonly eventQueueCapacity: number
  /**
   * The newest event whose turn this snapshot decided: `ack` with an update
   * stores it with the state, before the queue's head moves, and a claim of
   * an event at or below it finishes the acknowledgement instead of handing
   * the event out again. `null` before the first such `ack`.
   */
  readonly decidedSeq: number | null
}

/** The daemon fields of `queue` now; `deciding` 1 counts the event being acknowledged as gone. */
export async function daemonFields(
  queue: DaemonQueue,
  current: Delivery | null,
  decidedSeq: number | null,
  deciding: 0 | 1 = 0,
): Promise<DaemonFields> {
  const counts = await queue.counts()
  const queued = counts.queuedCount - deciding
  const inflight = current === null ? 0 : 1
  return {
    pendingEventCount: queued - inflight,
    queuedEventCount: queued,
    inflightEvent: current === null ? null : { seq: current.seq, attempt: current.attempt },
    wakeIntervalMs: queue.config.wakeIntervalMs,
    watchPaths: queue.config.watchPaths,
    eventQueueCapacity: queue.capacity,
    decidedSeq,
  }
}

/** Whether a stored worker state is the daemon's `{ app, daemon }` wrapping. */
export function isWrapped(value: JsonValue): value is { app: JsonValue; daemon: JsonValue } {
  return (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    'daemon' in value &&
    'app' in value
  )
}

/** The `decidedSeq` a stored worker state holds, or `null`. */
export function storedDecidedSeq(stored: JsonValue): number | null {
  if (!isWrapped(stored)) return null
  const { daemon } = stored
  if (daemon === null || typeof daemon !== 'object' || Array.isArray(daemon)) return null
  const seq = (daemon as { readonly decidedSeq?: JsonValue }).decidedSeq
  return typeof seq === 'number' ? seq : null
}
