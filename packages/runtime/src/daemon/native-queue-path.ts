import {
  type Backend,
  isAgentStateError,
  type NativeQueue,
  type NativeQueueClaim,
  type NativeQueueKeys,
} from '@agent-state/core'
import { daemonError } from '../shared/errors.js'
import { daemonEventKey, daemonHeadKey, daemonTailKey } from '../shared/layout.js'
import { releaseQuietly } from '../shared/owned-lease.js'
import {
  decodeRecord,
  type EventRecord,
  eventRecordSchema,
  type HeadRecord,
  headRecordSchema,
} from './queue-records.js'

/*
 * The native queue path (docs/runtime/daemons.md, "Queue paths"): each queue
 * operation is one call of the backend's `nativeQueue` capability, which
 * writes the same records as the generic path in one atomic step.
 */

/** What a queue on the native path keeps: the backend's operations and the queue's keys. */
export interface NativePath {
  readonly queue: NativeQueue
  readonly keys: NativeQueueKeys
}

/** The `nativeQueue` operations of `backend`, or `null` when it lacks the capability. */
export function nativeQueueOf(backend: Backend): NativeQueue | null {
  return backend.capabilities.nativeQueue !== undefined && backend.nativeQueue !== undefined
    ? backend.nativeQueue
    : null
}

/** The native path of queue `daemonId` on `backend`; `QUEUE_PATH_UNAVAILABLE` without the capability. */
export function nativePath(backend: Backend, daemonId: string): NativePath {
  const queue = nativeQueueOf(backend)
  if (queue === null) {
    throw daemonError(
      'QUEUE_PATH_UNAVAILABLE',
      `Daemon ${daemonId}'s queue is on the native path, which backend ${backend.name} does not offer (no nativeQueue capability); it is never used generically`,
      { daemonId, backend: backend.name, path: 'native' },
    )
  }
  // The event keys are the layout's: the prefix up to the zero-padded sequence number.
  const first = daemonEventKey(daemonId, 0)
  const eventPrefix = first.replace(/0+$/, '')
  return {
    queue,
    keys: {
      head: daemonHeadKey(daemonId),
      tail: daemonTailKey(daemonId),
      eventPrefix,
      eventDigits: first.length - eventPrefix.length,
    },
  }
}

/**
 * One event record's JSON after its `seq` field: the backend prepends
 * `{"format":…,"seq":<seq>`, so the stored JSON is exactly what
 * `encodeRecord` writes for the same record on the generic path. `eventJson`
 * is the event's `JSON.stringify` (from `encodeEvent`); the id (hex) and the
 * time (ISO 8601) need no escaping, so this is
 * `JSON.stringify({ eventId, event, triggeredAt }).slice(1)` without
 * serialising the event a second time.
 */
export function eventAfterSeq(eventId: string, eventJson: string, triggeredAt: string): string {
  return `,"eventId":"${eventId}","event":${eventJson},"triggeredAt":"${triggeredAt}"}`
}

/** A claimed head event and head record, decoded and checked. */
export interface NativeClaimed {
  readonly record: EventRecord
  readonly head: { readonly record: HeadRecord; readonly version: string }
  readonly lease: NonNullable<Awaited<ReturnType<NativeQueue['queueClaim']>>>['lease']
}

/**
 * Runs `queueClaim` and decodes its records: `null` when the queue is empty;
 * a backend `CORRUPT` is the queue's `QUEUE_CORRUPT`.
 */
export async function claimNative(
  backend: Backend,
  path: NativePath,
  daemonId: string,
  claim: NativeQueueClaim,
): Promise<NativeClaimed | null> {
  let claimed: Awaited<ReturnType<NativeQueue['queueClaim']>>
  try {
    claimed = await path.queue.queueClaim(path.keys, claim)
  } catch (error) {
    throw corruptAsQueue(error, daemonId)
  }
  if (claimed === null) return null
  try {
    const head = decodeRecord(headRecordSchema, claimed.head, { daemonId, key: path.keys.head })
    const record = decodeRecord(eventRecordSchema, claimed.event, {
      daemonId,
      key: daemonEventKey(daemonId, head.head),
    })
    return { record, head: { record: head, version: claimed.headVersion }, lease: claimed.lease }
  } catch (error) {
    // The script checked the event's format and sequence; a record failing the rest of its
    // schema is damage too, and the delivery is given back (as the generic claim does).
    await releaseQuietly(backend, claimed.lease)
    throw error
  }
}

/** A backend's `CORRUPT` from a native queue operation as the queue's `QUEUE_CORRUPT`; anything else unchanged. */
export function corruptAsQueue(error: unknown, daemonId: string): unknown {
  if (!isAgentStateError(error, 'CORRUPT')) return error
  return daemonError(
    'QUEUE_CORRUPT',
    `Daemon ${daemonId}'s queue records are damaged: ${error.message}`,
    { daemonId, key: error.context.key ?? null },
    error,
  )
}
