import { hostname } from 'node:os'
import {
  AgentStateError,
  type Backend,
  isAgentStateError,
  type Lease,
  MAX_LEASE_TTL_MS,
  type StoredValue,
} from '@agent-state/core'
import { z } from 'zod'
import type { JsonValue } from '../shared/canonical-json.js'
import { daemonError } from '../shared/errors.js'
import { daemonEventKey, daemonHeadKey } from '../shared/layout.js'
import { releaseQuietly } from '../shared/owned-lease.js'
import { keepDeliveryLease } from './delivery-lease.js'
import { claimNative, corruptAsQueue, type NativePath } from './native-queue-path.js'
import {
  type EventRecord,
  encodeRecord,
  type HeadRecord,
  RECORD_FORMATS,
  type TailRecord,
} from './queue-records.js'
import { signalQueueChange } from './queue-signals.js'
import { randomHex } from './random-hex.js'

/** Default visibility timeout of a delivery (its lease TTL): 30 seconds. */
export const DEFAULT_VISIBILITY_TIMEOUT_MS = 30_000

/** The default holder's start, read once: `os.hostname()` is a system call on every claim. */
const HOST_AND_PID = `${hostname()}:${process.pid}`

/** Options of `claim`; the single source of their types. */
export const deliveryOptionsSchema = z.strictObject({
  /** Who claims; default `<hostname>:<pid>:<random>`. 1 to 256 characters. */
  holder: z.string().min(1).max(256).optional(),
  /**
   * How long the delivery stays invisible to other consumers without a
   * `heartbeat` (the lease TTL). After it, another consumer gets the same
   * event and this delivery can no longer be acknowledged. Default 30 s.
   */
  visibilityTimeoutMs: z.int().min(1).max(MAX_LEASE_TTL_MS).default(DEFAULT_VISIBILITY_TIMEOUT_MS),
})

/** What `claim` accepts. */
export type DeliveryOptions = z.input<typeof deliveryOptionsSchema>

/** The holder and lease TTL of a claim, from its options (`INVALID_QUEUE_OPTIONS` when invalid). */
export function deliveryRequest(
  daemonId: string,
  input: DeliveryOptions,
): { holder: string; ttlMs: number } {
  const parsed = deliveryOptionsSchema.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw daemonError(
      'INVALID_QUEUE_OPTIONS',
      `Invalid claim option ${issue?.path.join('.') ?? ''}`,
      { daemonId, path: issue?.path.join('.') ?? '' },
    )
  }
  const holder = parsed.data.holder ?? `${HOST_AND_PID}:${randomHex(4)}`
  return { holder, ttlMs: parsed.data.visibilityTimeoutMs }
}

/** `DELIVERY_IN_FLIGHT` for a claim refused with `LEASE_HELD`. */
export function inFlight(daemonId: string, error: AgentStateError): AgentStateError {
  return daemonError(
    'DELIVERY_IN_FLIGHT',
    `Daemon ${daemonId} has a delivery in flight`,
    { daemonId, holder: error.context.holder ?? null },
    error,
  )
}

/** What a delivery reads from its queue to claim the next event under its lease. */
export interface DeliverySource {
  /** The queue's tail record. */
  readTail(): Promise<TailRecord>
  /** The event at `seq` (see `DaemonQueue.readEventIfPresent`). */
  readEventIfPresent(
    seq: number,
    tail: TailRecord,
    own?: StoredValue | null,
  ): Promise<EventRecord | null>
  /** The queue's clock, for `claimedAt`. */
  now(): number
  /** The native path of a native queue: the delivery then settles with its operations. */
  readonly native?: NativePath
}

/**
 * One hand-out of the head event to one consumer. It is current while its
 * lease on the queue's head record is: `ack`, `release` and `heartbeat` are
 * fenced by that lease, so once the delivery expired and another consumer
 * claimed the event they fail with `LEASE_LOST` and change nothing.
 */
export class Delivery {
  readonly daemonId: string
  readonly seq: number
  /** The producer-side id of this trigger call (the same on every re-delivery). */
  readonly eventId: string
  readonly event: JsonValue
  readonly triggeredAt: string
  /** 1 on the first hand-out of this event, then 2, 3, ... (durable across crashes). */
  readonly attempt: number
  readonly #backend: Backend
  readonly #head: HeadRecord
  readonly #headVersion: string
  readonly #source: DeliverySource
  #lease: Lease
  #settled = false

  /** Use `DaemonQueue.claim`. */
  constructor(
    backend: Backend,
    daemonId: string,
    record: EventRecord,
    head: { readonly record: HeadRecord; readonly version: string },
    lease: Lease,
    source: DeliverySource,
  ) {
    this.daemonId = daemonId
    this.seq = record.seq
    this.eventId = record.eventId
    this.event = record.event
    this.triggeredAt = record.triggeredAt
    this.attempt = head.record.attempts
    this.#backend = backend
    this.#head = head.record
    this.#headVersion = head.version
    this.#lease = lease
    this.#source = source
  }

  /**
   * The delivery's fencing token: strictly increasing per queue across every
   * claim that takes the delivery lease. Deliveries handed out by
   * {@link Delivery.ackAndClaim} keep their predecessor's lease and so its
   * token; each of them is fenced by the token together with the head
   * record's version, so an earlier delivery of the chain is stale too.
   */
  get token(): number {
    return this.#lease.token
  }
  get holder(): string {
    return this.#lease.holder
  }
  /** When the delivery expires unless renewed, on the backend's lease clock. */
  get expiresAt(): number {
    return this.#lease.expiresAt
  }

  /**
   * Removes the event from the queue: one fenced write of the head record,
   * then the event's own record is deleted and the lease released.
   *
   * @throws `LEASE_LOST` when the delivery is stale (expired, taken over,
   *   already acknowledged or released); nothing changes then.
   */
  async ack(): Promise<void> {
    this.#requireOpen('ack')
    const next: HeadRecord = {
      format: RECORD_FORMATS.head,
      head: this.seq + 1,
      attempts: 0,
      iterations: this.#head.iterations + 1,
      claim: null,
    }
    if (this.#source.native !== undefined) {
      // One step: the fenced head write, the event's removal and the release.
      await this.#settleNative(next, daemonEventKey(this.daemonId, this.seq), 'ack')
      signalQueueChange(this.#backend, this.daemonId)
      return
    }
    try {
      await this.#backend.put(daemonHeadKey(this.daemonId), encodeRecord(next), {
        lease: this.#lease,
        ifMatch: this.#headVersion,
      })
    } catch (error) {
      // Only lease holders write the head record, so a moved version means a newer holder.
      if (isAgentStateError(error, 'PRECONDITION_FAILED')) throw this.#lost('ack', error)
      throw error
    }
    this.#settled = true
    // Cleanup: an event record left behind by a crash here is below the head, never
    // delivered again, and removed by the next claim.
    await removeLeftover(this.#backend, daemonEventKey(this.daemonId, this.seq))
    await releaseQuietly(this.#backend, this.#lease)
    signalQueueChange(this.#backend, this.daemonId)
  }

  /**
   * Acknowledges this event and claims the next one in the same step,
   * keeping the delivery lease instead of releasing it and acquiring it
   * again: the lease is renewed (the next delivery gets the full visibility
   * timeout, and the same token), and one fenced write of the head record
   * both removes this event and records the next one's first attempt.
   * Resolves the next delivery, or `null` after a plain `ack` (lease
   * released) when the queue holds nothing more. This delivery is settled
   * either way.
   *
   * @throws `LEASE_LOST` when this delivery is stale (nothing changes, as
   *   with `ack`); `QUEUE_CORRUPT` when the next event is missing.
   */
  async ackAndClaim(): Promise<Delivery | null> {
    this.#requireOpen('ack')
    if (this.#source.native !== undefined) return this.#ackAndClaimNative(this.#source.native)
    const seq = this.seq + 1
    const [kept, tail, own] = await Promise.all([
      keepDeliveryLease(this.#backend, this.#lease).catch((error: unknown) => {
        if (isAgentStateError(error, 'LEASE_LOST')) throw this.#lost('ack', error)
        throw error
      }),
      this.#source.readTail(),
      // Read at once, in parallel: the next event usually has its own record by now.
      this.#backend.get(daemonEventKey(this.daemonId, seq)),
    ])
    this.#lease = kept
    if (seq >= tail.next) {
      await this.ack()
      return null
    }
    // Under the lease nobody else moves the head, so the event cannot be acknowledged meanwhile.
    const record = await this.#source.readEventIfPresent(seq, tail, own)
    if (record === null) {
      throw daemonError('QUEUE_CORRUPT', `Event ${seq} of ${this.daemonId} is missing`, {
        daemonId: this.daemonId,
        seq,
      })
    }
    const next: HeadRecord = {
      format: RECORD_FORMATS.head,
      head: seq,
      attempts: 1,
      iterations: this.#head.iterations + 1,
      claim: {
        seq,
        holder: kept.holder,
        token: kept.token,
        claimedAt: new Date(this.#source.now()).toISOString(),
      },
    }
    let version: string
    try {
      const meta = await this.#backend.put(daemonHeadKey(this.daemonId), encodeRecord(next), {
        lease: kept,
        ifMatch: this.#headVersion,
      })
      version = meta.version
    } catch (error) {
      if (isAgentStateError(error, 'PRECONDITION_FAILED')) throw this.#lost('ack', error)
      throw error
    }
    this.#settled = true
    await removeLeftover(this.#backend, daemonEventKey(this.daemonId, this.seq))
    signalQueueChange(this.#backend, this.daemonId)
    return new Delivery(
      this.#backend,
      this.daemonId,
      record,
      { record: next, version },
      kept,
      this.#source,
    )
  }

  /**
   * Gives the event back: it stays at the head and is the next one claimed
   * (its attempt count is kept). Used by `stop`.
   *
   * @throws `LEASE_LOST` when the delivery is stale.
   */
  async release(): Promise<void> {
    this.#requireOpen('release')
    const released = await this.#backend.releaseLease(this.#lease)
    this.#settled = true
    signalQueueChange(this.#backend, this.daemonId)
    if (!released) throw this.#lost('release')
  }

  /**
   * Gives back a delivery that was never handed to the application (a
   * daemon's kept delivery, see `Daemon.ack`): one fenced write puts the
   * head record's attempt count back to what it was before this claim, then
   * the lease is released. The event stays at the head, and its next
   * hand-out counts the attempt this one did not make.
   *
   * @throws `LEASE_LOST` when the delivery is stale (nothing changes then).
   */
  async releaseUnseen(): Promise<void> {
    this.#requireOpen('release')
    const unclaimed: HeadRecord = { ...this.#head, attempts: this.attempt - 1, claim: null }
    if (this.#source.native !== undefined) {
      await this.#settleNative(unclaimed, null, 'release')
      signalQueueChange(this.#backend, this.daemonId)
      return
    }
    try {
      await this.#backend.put(daemonHeadKey(this.daemonId), encodeRecord(unclaimed), {
        lease: this.#lease,
        ifMatch: this.#headVersion,
      })
    } catch (error) {
      if (
        isAgentStateError(error, 'PRECONDITION_FAILED') ||
        isAgentStateError(error, 'LEASE_LOST')
      ) {
        this.#settled = true
        await releaseQuietly(this.#backend, this.#lease)
        throw this.#lost('release', error)
      }
      throw error
    }
    await this.release()
  }

  /** Extends the visibility timeout by the delivery's TTL. @throws `LEASE_LOST` when stale. */
  async heartbeat(): Promise<void> {
    this.#requireOpen('heartbeat')
    // The same fenced renewal that keeps the lease in `ackAndClaim`: tokens decide.
    this.#lease = await keepDeliveryLease(this.#backend, this.#lease)
  }

  /**
   * `queueSettle`: writes `head` fenced by this delivery's lease and head
   * version, removes `removeEvent`, releases the lease. Settled afterwards,
   * also when refused as stale (`LEASE_LOST`, nothing changed).
   */
  async #settleNative(head: HeadRecord, removeEvent: string | null, operation: string) {
    const native = this.#source.native as NativePath
    try {
      await native.queue.queueSettle(native.keys, {
        lease: this.#lease,
        headVersion: this.#headVersion,
        head: encodeRecord(head),
        removeEvent,
      })
    } catch (error) {
      if (
        isAgentStateError(error, 'PRECONDITION_FAILED') ||
        isAgentStateError(error, 'LEASE_LOST')
      ) {
        this.#settled = true
        throw this.#lost(operation, error)
      }
      throw corruptAsQueue(error, this.daemonId)
    }
    this.#settled = true
  }

  /** `ackAndClaim` on the native path: one `queueClaim` acknowledges this event and keeps the lease. */
  async #ackAndClaimNative(native: NativePath): Promise<Delivery | null> {
    let claimed: Awaited<ReturnType<typeof claimNative>>
    try {
      claimed = await claimNative(this.#backend, native, this.daemonId, {
        holder: this.#lease.holder,
        ttlMs: this.#lease.ttlMs,
        claimedAt: new Date(this.#source.now()).toISOString(),
        previous: { lease: this.#lease, headVersion: this.#headVersion, seq: this.seq },
      })
    } catch (error) {
      if (
        isAgentStateError(error, 'PRECONDITION_FAILED') ||
        isAgentStateError(error, 'LEASE_LOST')
      ) {
        this.#settled = true
        throw this.#lost('ack', error)
      }
      throw error
    }
    this.#settled = true
    signalQueueChange(this.#backend, this.daemonId)
    if (claimed === null) return null
    return new Delivery(
      this.#backend,
      this.daemonId,
      claimed.record,
      claimed.head,
      claimed.lease,
      this.#source,
    )
  }

  #requireOpen(operation: string): void {
    if (this.#settled) throw this.#lost(operation)
  }

  #lost(operation: string, cause?: unknown): AgentStateError {
    return new AgentStateError('LEASE_LOST', `Delivery ${this.seq} of ${this.daemonId} is stale`, {
      context: { daemonId: this.daemonId, seq: this.seq, token: this.token, operation },
      ...(cause === undefined ? {} : { cause }),
    })
  }
}

/**
 * Deletes a record below the head if one is there (the newest event usually has none: it
 * lives in the tail record). Failures only leave it for the next claim.
 */
export async function removeLeftover(backend: Backend, key: string): Promise<boolean> {
  try {
    return (await backend.head(key)) !== null && (await backend.delete(key))
  } catch {
    return false
  }
}
