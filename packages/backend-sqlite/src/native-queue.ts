import {
  ABSENT_STATE,
  AgentStateError,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  assertLeaseShape,
  assertValidKey,
  checkAcquire,
  checkWriteLease,
  type KeyState,
  type Lease,
  MAX_KEY_BYTES,
  type NativeQueue,
  type NativeQueueCapability,
  type NativeQueueKeys,
  quoteForMessage,
  type StoredValue,
} from '@agent-state/core'
import { appendRoom, grantDelivery } from './queue-steps.js'
import type { LoadedState } from './row-codec.js'

/** What this backend claims as `capabilities.nativeQueue`. */
export const SQLITE_NATIVE_QUEUE: NativeQueueCapability = { version: 1 }

/**
 * What the native queue needs of its backend instance (sqlite-backend.ts):
 * the group commit and the row reads and writes every other operation uses.
 */
export interface QueueRows {
  /**
   * Runs `body` in the instance's group commit (one `BEGIN IMMEDIATE`
   * transaction shared with the other writes of this event-loop turn, its own
   * savepoint inside it): settles after the commit, a throw rolls the body back.
   */
  submit<T>(operation: string, body: () => T, bytes: number): Promise<T>
  /** The state of a key for a write (no value), `undefined` when it has no row. */
  load(key: string): LoadedState | undefined
  /** The key's value and meta, `null` when it holds none (rows checked as `get` checks them). */
  read(key: string): StoredValue | null
  /** Writes what changed between `loaded` and `next`. */
  store(key: string, loaded: LoadedState | undefined, next: KeyState): void
  /** The backend's clock (ms since the epoch). */
  clock(): number
  /** Throws `CLOSED` once the backend is closed. */
  assertOpen(): void
}

const EVENT_FORMAT = 'agent-state/daemon-event'
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** A queue record (head or tail JSON) as an object, `null` when missing or not JSON. */
function decoded(found: StoredValue | null): Record<string, unknown> | null {
  if (found === null) return null
  try {
    const value: unknown = JSON.parse(decoder.decode(found.value))
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

const isSeq = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value >= 0

/** A head or tail record, or an event, that the queue cannot use: the runtime's `QUEUE_CORRUPT`. */
function corrupt(key: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Daemon queue record ${quoteForMessage(key)} is missing or unreadable`,
    { context: { key, problem: 'daemon queue record missing or unreadable' } },
  )
}

/**
 * The native daemon queue of one SQLite backend instance: each operation is
 * one body in the group commit, so one transaction, and the triggers and
 * claims of one process in one event-loop turn share its fsync. The bodies
 * apply core's rules (`applyPut`, `applyAcquire`, `applyRenew`,
 * `applyRelease`, `applyDelete`) to every record they touch, exactly as
 * `put`, `acquireLease`, `renewLease`, `releaseLease` and `delete` would,
 * so versions, revisions, the listing index and the fencing counter are
 * theirs, and a refused operation throws before it writes (rolled back in
 * any case). The records are the runtime's (docs/runtime/daemons.md, "Records").
 */
export function sqliteNativeQueue(rows: QueueRows): NativeQueue {
  /** Checks the queue's keys as every operation checks its key; the widest event key too. */
  function checkKeys(keys: NativeQueueKeys): void {
    rows.assertOpen()
    assertValidKey(keys.head, MAX_KEY_BYTES)
    assertValidKey(keys.tail, MAX_KEY_BYTES)
    assertValidKey(`${keys.eventPrefix}${'9'.repeat(keys.eventDigits)}`, MAX_KEY_BYTES)
  }

  /** A key's row and state in the running transaction. */
  function slot(key: string) {
    const loaded = rows.load(key)
    return { key, loaded, state: loaded?.state ?? ABSENT_STATE }
  }

  /** Deletes a record if it holds a value (an event record: never leased). */
  function remove(key: string, now: number): void {
    const { loaded, state } = slot(key)
    const next = applyDelete(key, state, undefined, now)
    if (next !== undefined) rows.store(key, loaded, next)
  }

  /** The event record at `seq` as stored, or `CORRUPT` when missing or not the event of `seq`. */
  function headEvent(keys: NativeQueueKeys, seq: number): Uint8Array {
    const key = eventKey(keys, seq)
    const found = rows.read(key)
    const record = decoded(found)
    if (found === null || record?.format !== EVENT_FORMAT || record.seq !== seq) throw corrupt(key)
    return found.value
  }

  /** The head and tail records' numbers, `CORRUPT` (the head's key) unless they decode. */
  function queueState(keys: NativeQueueKeys) {
    const head = decoded(rows.read(keys.head))
    const tail = decoded(rows.read(keys.tail))
    if (
      !(head && tail && isSeq(tail.next) && isSeq(head.head)) ||
      !isSeq(head.attempts) ||
      !isSeq(head.iterations)
    ) {
      throw corrupt(keys.head)
    }
    return {
      next: tail.next,
      head: head.head,
      attempts: head.attempts,
      iterations: head.iterations,
    }
  }

  return {
    async queueAppend(keys, append) {
      checkKeys(keys)
      if (append.events.length === 0) {
        throw new AgentStateError('INVALID_ARGUMENT', 'queueAppend needs at least one event')
      }
      const bytes = append.events.reduce((sum, event) => sum + event.length, 0)
      return rows.submit(
        'queueAppend',
        () => {
          const now = rows.clock()
          const tailSlot = slot(keys.tail)
          // The tail is written with no lease, like a producer's put: a leased tail is refused first.
          checkWriteLease(keys.tail, tailSlot.state, undefined, now)
          const tail = decoded(rows.read(keys.tail))
          const head = decoded(rows.read(keys.head))
          if (!(tail && head && isSeq(tail.next) && isSeq(head.head))) throw corrupt(keys.tail)
          const first = tail.next
          const stored = appendRoom(
            append.capacity,
            first,
            head.head,
            append.events.length,
            append.mode,
          )
          if (stored === 0) return { first, stored: 0 }
          const records: string[] = []
          for (let i = 0; i < stored; i++) {
            const seq = first + i
            const json = `{"format":"${EVENT_FORMAT}","seq":${seq}${append.events[i]}`
            const key = eventKey(keys, seq)
            const { loaded, state } = slot(key)
            rows.store(
              key,
              loaded,
              applyPut(key, state, encoder.encode(json), null, undefined, now),
            )
            records.push(json)
          }
          const earlier = stored > 1 ? `,"earlier":[${records.slice(0, -1).join(',')}]` : ''
          const value = `{"format":"agent-state/daemon-tail","next":${first + stored},"last":${records.at(-1)}${earlier}}`
          rows.store(
            keys.tail,
            tailSlot.loaded,
            applyPut(keys.tail, tailSlot.state, encoder.encode(value), null, undefined, now),
          )
          return { first, stored }
        },
        bytes,
      )
    },

    async queueClaim(keys, claim) {
      checkKeys(keys)
      checkAcquire(keys.head, { holder: claim.holder, ttlMs: claim.ttlMs }, MAX_KEY_BYTES)
      const previous = claim.previous
      if (previous !== undefined) assertLeaseShape(previous.lease)
      return rows.submit(
        'queueClaim',
        () => {
          const now = rows.clock()
          const headSlot = slot(keys.head)
          const q = queueState(keys)
          if (previous !== undefined) {
            // The acknowledgement of `previous`: its lease current (LEASE_LOST), then the head
            // record the version it wrote (PRECONDITION_FAILED), as its fenced put checks them.
            const fenced = { lease: previous.lease, ifMatch: previous.headVersion }
            const at = previous.seq + 1
            const iterations = q.iterations + 1
            const done = eventKey(keys, previous.seq)
            if (at >= q.next) {
              // Nothing more: a plain ack (the head moved, the event gone, the lease released).
              const json = headJson(at, 0, iterations, null)
              const written = applyPut(keys.head, headSlot.state, json, null, fenced, now)
              rows.store(
                keys.head,
                headSlot.loaded,
                applyRelease(written, previous.lease) ?? written,
              )
              remove(done, now)
              return null
            }
            // The kept lease renewed by renewLease's rule (LEASE_LOST when stale).
            const renewed = applyRenew(headSlot.state, previous.lease, now)
            const { lease } = renewed
            const json = headJson(at, 1, iterations, claimOf(at, lease, claim.claimedAt))
            const written = applyPut(
              keys.head,
              renewed.state,
              json,
              null,
              { ...fenced, lease },
              now,
            )
            const event = headEvent(keys, at)
            rows.store(keys.head, headSlot.loaded, written)
            remove(done, now)
            return claimed(event, json, written, lease)
          }
          if (q.head >= q.next) return null
          const event = headEvent(keys, q.head)
          const granted = grantDelivery(keys.head, headSlot.state, claim.holder, claim.ttlMs, now)
          // Leftover of an ack that crashed between its writes (generic path): gone before the claim.
          if (q.head > 0) remove(eventKey(keys, q.head - 1), now)
          const { lease } = granted
          const json = headJson(
            q.head,
            q.attempts + 1,
            q.iterations,
            claimOf(q.head, lease, claim.claimedAt),
          )
          const written = applyPut(keys.head, granted.state, json, null, { lease }, now)
          rows.store(keys.head, headSlot.loaded, written)
          return claimed(event, json, written, lease)
        },
        0,
      )
    },

    async queueSettle(keys, settle) {
      checkKeys(keys)
      assertLeaseShape(settle.lease)
      if (settle.removeEvent !== null) assertValidKey(settle.removeEvent, MAX_KEY_BYTES)
      const removeEvent = settle.removeEvent
      // A copy: the write happens later in this turn (group commit).
      const head = settle.head.slice()
      return rows.submit(
        'queueSettle',
        () => {
          const now = rows.clock()
          const { loaded, state } = slot(keys.head)
          const written = applyPut(
            keys.head,
            state,
            head,
            null,
            { lease: settle.lease, ifMatch: settle.headVersion },
            now,
          )
          rows.store(keys.head, loaded, applyRelease(written, settle.lease) ?? written)
          if (removeEvent !== null) remove(removeEvent, now)
        },
        head.byteLength,
      )
    },
  }
}

/** The key of the event record of `seq`. */
function eventKey(keys: NativeQueueKeys, seq: number): string {
  return `${keys.eventPrefix}${String(seq).padStart(keys.eventDigits, '0')}`
}

/** The claim field of a head record, fields in the runtime's order. */
function claimOf(seq: number, lease: Lease, claimedAt: string) {
  return { seq, holder: lease.holder, token: lease.token, claimedAt }
}

/** A head record as the runtime's `encodeRecord` writes it (fields in its order). */
function headJson(
  head: number,
  attempts: number,
  iterations: number,
  claim: ReturnType<typeof claimOf> | null,
): Uint8Array {
  return encoder.encode(
    JSON.stringify({ format: 'agent-state/daemon-head', head, attempts, iterations, claim }),
  )
}

/** `queueClaim`'s result from what the transaction wrote. */
function claimed(event: Uint8Array, head: Uint8Array, written: KeyState, lease: Lease) {
  return { event, head, headVersion: written.version as string, lease }
}
