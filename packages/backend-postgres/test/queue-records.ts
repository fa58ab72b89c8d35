import type { Backend, NativeQueue, NativeQueueKeys } from '@agent-state/core'

/**
 * A daemon queue's records as the runtime lays them out (docs/runtime/daemons.md,
 * "Records"), for the native queue's tests at the backend's level.
 */

/** JSON of `value` as a record's bytes. */
export const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
/** A record's bytes as JSON. */
export const decode = (value: Uint8Array | undefined) => JSON.parse(new TextDecoder().decode(value))

/** The keys of the one queue the tests use. */
export const KEYS: NativeQueueKeys = {
  head: 'daemons/q/head.json',
  tail: 'daemons/q/tail.json',
  eventPrefix: 'daemons/q/events/',
  eventDigits: 16,
}

/** Event `n`'s record after its `seq` (see `NativeQueueAppend.events`). */
export const event = (n: number) =>
  `,"eventId":"e${n}","event":${n},"triggeredAt":"2026-12-03T00:00:00.000Z"}`

/** An empty queue's head and tail records, as the runtime creates them. */
export async function createQueue(backend: Backend): Promise<void> {
  await backend.put(
    KEYS.head,
    encode({ format: 'agent-state/daemon-head', head: 0, attempts: 0, iterations: 0, claim: null }),
  )
  await backend.put(KEYS.tail, encode({ format: 'agent-state/daemon-tail', next: 0, last: null }))
}

/** The backend's native queue (the PostgreSQL backend always has one). */
export function queueOf(backend: Backend): NativeQueue {
  const queue = backend.nativeQueue
  if (queue === undefined) throw new Error(`the ${backend.name} backend has no native queue`)
  return queue
}
