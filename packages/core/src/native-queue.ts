import type { Lease } from './lease.js'

/**
 * The optional `nativeQueue` capability of a backend: the daemon queue's
 * operations as one atomic server-side step each (a Lua script on Redis),
 * where the generic path composes several Backend calls. A backend that has
 * it sets `capabilities.nativeQueue` and the `nativeQueue` member together.
 *
 * The records are exactly those of the generic path (`@agent-state/runtime`,
 * docs/runtime/daemons.md "Records"): the same keys, the same JSON, stored as
 * ordinary values of the backend (versions, index, fencing counter and lease
 * as its `put` and `acquireLease` keep them), so `get`, `list` and every
 * reader of the generic path see a queue written natively unchanged.
 */
export interface NativeQueueCapability {
  /** Version of the record protocol the backend implements; 1 today. */
  readonly version: 1
}

/** The keys of one daemon queue, as the runtime lays them out. */
export interface NativeQueueKeys {
  /** The head record (consumer side, carries the delivery lease). */
  readonly head: string
  /** The tail record (producer side). */
  readonly tail: string
  /** The event record of sequence `seq` is `eventPrefix` + `seq` padded with zeros to `eventDigits`. */
  readonly eventPrefix: string
  readonly eventDigits: number
}

/** One append: events whose sequence numbers the backend assigns. */
export interface NativeQueueAppend {
  /** Events the queue may hold, pending plus in flight (`next - head`). */
  readonly capacity: number
  /**
   * Each event record's canonical JSON after its `seq` field: the backend
   * stores `{"format":"agent-state/daemon-event","seq":<seq>` + this.
   */
  readonly events: readonly string[]
  /** `all`: store every event or none; `prefix`: as many as fit, in order. */
  readonly mode: 'all' | 'prefix'
}

/** What an append stored: `stored` events from sequence `first` (0 when full). */
export interface NativeQueueAppended {
  readonly first: number
  readonly stored: number
}

/** A claim of the head event; with `previous`, the acknowledgement of the delivery before it. */
export interface NativeQueueClaim {
  readonly holder: string
  /** The delivery lease's TTL (visibility timeout). */
  readonly ttlMs: number
  /** ISO time recorded as the claim's `claimedAt`. */
  readonly claimedAt: string
  /**
   * Acknowledge this delivery first and keep (renew) its lease for the next
   * one, in the same atomic step. Refused with `LEASE_LOST` when it is stale.
   */
  readonly previous?: { readonly lease: Lease; readonly headVersion: string; readonly seq: number }
}

/** The claimed head event (`null` from `queueClaim` when the queue is empty). */
export interface NativeQueueClaimed {
  /** The event record's JSON. */
  readonly event: Uint8Array
  /** The head record as written by the claim, and its version. */
  readonly head: Uint8Array
  readonly headVersion: string
  /** The delivery lease on the head record (a fresh token, or `previous`'s kept lease). */
  readonly lease: Lease
}

/** A fenced settlement of a delivery: one head write, an optional event removal, a release. */
export interface NativeQueueSettle {
  readonly lease: Lease
  /** The head record's version the delivery wrote (compare-and-set). */
  readonly headVersion: string
  /** The head record to write. */
  readonly head: Uint8Array
  /** The acknowledged event's key to remove, or `null`. */
  readonly removeEvent: string | null
}

/**
 * The operations of the `nativeQueue` capability. Each is one atomic step on
 * the server, honours the backend's write acknowledgement (Redis `WAIT`) like
 * its `put`, and fails with the contract's codes (`LEASE_HELD`,
 * `LEASE_LOST`, `PRECONDITION_FAILED`, `INDETERMINATE`, `UNAVAILABLE`).
 * Callers are the runtime's daemon queues; the records' JSON is theirs.
 */
export interface NativeQueue {
  /** Appends events at the tail under the capacity bound, giving each its own record. */
  queueAppend(keys: NativeQueueKeys, append: NativeQueueAppend): Promise<NativeQueueAppended>
  /**
   * Takes the head record's lease (or keeps `previous`'s), counts the attempt
   * in the head record and returns the head event; `null` when empty (a kept
   * lease is then released). `LEASE_HELD` while another delivery is live.
   */
  queueClaim(keys: NativeQueueKeys, claim: NativeQueueClaim): Promise<NativeQueueClaimed | null>
  /** Writes the head record fenced by the lease and version, removes the event, releases the lease. */
  queueSettle(keys: NativeQueueKeys, settle: NativeQueueSettle): Promise<void>
}
