import type { StoredValue } from './backend.js'
import { AgentStateError } from './errors.js'
import {
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  checkWriteLease,
  metaOf,
} from './key-state.js'
import { assertValidKey, quoteForMessage } from './keys.js'
import type { Lease } from './lease.js'
import type {
  NativeQueueAppend,
  NativeQueueAppended,
  NativeQueueClaim,
  NativeQueueClaimed,
  NativeQueueKeys,
} from './native-queue.js'
import { leadingNumbers, numberTemplate } from './queue-record-numbers.js'
import type { KeyState } from './record-codec.js'

/*
 * The steps of a native daemon queue (native-queue.ts) for a backend that
 * runs each operation as one transaction over its rows (SQLite, PostgreSQL):
 * what the operation reads, decides and writes, by core's own rules
 * (`applyPut`, `applyAcquire`, `applyRenew`, `applyRelease`, `applyDelete`),
 * so versions, revisions, leases and the fencing counter are exactly what
 * `put`, the lease calls and `delete` would leave. The backend supplies the
 * rows (read inside its transaction, written at its commit); a step that
 * throws (`LEASE_HELD`, `LEASE_LOST`, `PRECONDITION_FAILED`, `CORRUPT`)
 * must roll the transaction back. The records are the runtime's
 * (docs/runtime/daemons.md, "Records").
 */

/** The rows of one queue transaction, as the backend gives them to a step. */
export interface QueueRows {
  /** The backend's clock (ms since the epoch) for this transaction. */
  readonly now: number
  /** A key's state in the transaction (its value included where `read` needs it). */
  state(key: string): KeyState
  /** The key's value and meta, `null` when it holds none (checked as `get` checks it). */
  read(key: string): StoredValue | null
  /** Writes `next` as the key's state in the transaction. */
  store(key: string, next: KeyState): void
}

/**
 * How many of `count` events an append stores into a queue holding
 * `next - head` events (pending plus in flight) under `capacity`: all that
 * fit in `prefix` mode, all or none in `all` mode; 0 means `QUEUE_FULL`.
 * The head is read in the same transaction as the tail, so the bound is exact.
 */
export function appendRoom(
  capacity: number,
  next: number,
  head: number,
  count: number,
  mode: 'all' | 'prefix',
): number {
  const stored = Math.min(capacity - (next - head), count)
  if (stored <= 0 || (mode === 'all' && stored < count)) return 0
  return stored
}

/**
 * The delivery lease a fresh claim takes on the head record: `acquireLease`'s
 * own rule (`LEASE_HELD` while another delivery is live; the token from the
 * record's fencing counter, one larger than any before).
 */
export function grantDelivery(
  key: string,
  state: KeyState,
  holder: string,
  ttlMs: number,
  now: number,
): { state: KeyState; lease: Lease } {
  return applyAcquire(key, state, { holder, ttlMs }, now)
}

/**
 * The two decisions that make the queue's guarantees (the exact capacity, a
 * fresh fencing token per delivery). A backend passes its own module's (its
 * `queue-steps.ts`, re-exporting the two above), so the runtime's mutant
 * tests can replace each per backend and see its check fail
 * (packages/runtime/test/daemon-queue-native-mutants.test.ts).
 */
export interface QueueDecisions {
  readonly appendRoom: typeof appendRoom
  readonly grantDelivery: typeof grantDelivery
}

const EVENT_FORMAT = 'agent-state/daemon-event'
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/** Checks a queue's keys as every operation checks its key; the widest event key too. */
export function checkQueueKeys(keys: NativeQueueKeys, maxKeyBytes: number): void {
  assertValidKey(keys.head, maxKeyBytes)
  assertValidKey(keys.tail, maxKeyBytes)
  assertValidKey(`${keys.eventPrefix}${'9'.repeat(keys.eventDigits)}`, maxKeyBytes)
}

/** The key of the event record of `seq`. */
export function queueEventKey(keys: NativeQueueKeys, seq: number): string {
  return `${keys.eventPrefix}${String(seq).padStart(keys.eventDigits, '0')}`
}

/** `queueAppend` without events: `INVALID_ARGUMENT`. */
export function assertQueueEvents(append: NativeQueueAppend): void {
  if (append.events.length === 0) {
    throw new AgentStateError('INVALID_ARGUMENT', 'queueAppend needs at least one event')
  }
}

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

const HEAD_FORMAT = 'agent-state/daemon-head'
const TAIL_FORMAT = 'agent-state/daemon-tail'

const TAIL_NUMBERS = numberTemplate(TAIL_FORMAT, ['next'])
const HEAD_NUMBERS = numberTemplate(HEAD_FORMAT, ['head', 'attempts', 'iterations'])
const EVENT_NUMBERS = numberTemplate(EVENT_FORMAT, ['seq'])

/** A head or tail record, or an event, that the queue cannot use: the runtime's `QUEUE_CORRUPT`. */
export function queueRecordCorrupt(key: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Daemon queue record ${quoteForMessage(key)} is missing or unreadable`,
    { context: { key, problem: 'daemon queue record missing or unreadable' } },
  )
}

/** Deletes a record if it holds a value (an event record: never leased). */
function remove(rows: QueueRows, key: string): void {
  const next = applyDelete(key, rows.state(key), undefined, rows.now)
  if (next !== undefined) rows.store(key, next)
}

/**
 * The event record at `seq` as stored, or `CORRUPT` when missing or not the
 * event of `seq` (its leading format and sequence number, see
 * `leadingNumbers`; the consumer decodes the event in full).
 */
function headEvent(rows: QueueRows, keys: NativeQueueKeys, seq: number): Uint8Array {
  const key = queueEventKey(keys, seq)
  const found = rows.read(key)
  if (found !== null && leadingNumbers(found.value, EVENT_NUMBERS)?.[0] === seq) return found.value
  const record = decoded(found)
  if (found === null || record?.format !== EVENT_FORMAT || record.seq !== seq) {
    throw queueRecordCorrupt(key)
  }
  return found.value
}

/** The tail record's next sequence number, or `undefined` when it has none. */
function tailNext(found: StoredValue | null): number | undefined {
  const fast = found === null ? null : leadingNumbers(found.value, TAIL_NUMBERS)
  if (fast !== null) return fast[0]
  const tail = decoded(found)
  return tail !== null && isSeq(tail.next) ? tail.next : undefined
}

/** The head record's numbers, or `undefined` when it lacks one. */
function headNumbers(found: StoredValue | null) {
  const fast = found === null ? null : leadingNumbers(found.value, HEAD_NUMBERS)
  if (fast !== null) {
    const [head, attempts, iterations] = fast as [number, number, number]
    return { head, attempts, iterations }
  }
  const record = decoded(found)
  if (record === null || !isSeq(record.head)) return undefined
  return { head: record.head, attempts: record.attempts, iterations: record.iterations }
}

/** The head and tail records' numbers, `CORRUPT` (the head's key) unless they decode. */
function queueState(rows: QueueRows, keys: NativeQueueKeys) {
  const head = headNumbers(rows.read(keys.head))
  const next = tailNext(rows.read(keys.tail))
  if (
    head === undefined ||
    next === undefined ||
    !isSeq(head.attempts) ||
    !isSeq(head.iterations)
  ) {
    throw queueRecordCorrupt(keys.head)
  }
  return { next, head: head.head, attempts: head.attempts, iterations: head.iterations }
}

/**
 * `queueAppend`: reads the tail and head records, checks the capacity
 * (`decisions.appendRoom`), writes an event record per stored event and the
 * tail record (with no lease, like a producer's `put`).
 */
export function appendStep(
  rows: QueueRows,
  keys: NativeQueueKeys,
  append: NativeQueueAppend,
  decisions: QueueDecisions,
): NativeQueueAppended {
  const { now } = rows
  // A leased tail is refused first, as a producer's put would be.
  checkWriteLease(keys.tail, rows.state(keys.tail), undefined, now)
  const first = tailNext(rows.read(keys.tail))
  const head = headNumbers(rows.read(keys.head))
  if (first === undefined || head === undefined) throw queueRecordCorrupt(keys.tail)
  const stored = decisions.appendRoom(
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
    const key = queueEventKey(keys, seq)
    rows.store(key, applyPut(key, rows.state(key), encoder.encode(json), null, undefined, now))
    records.push(json)
  }
  const earlier = stored > 1 ? `,"earlier":[${records.slice(0, -1).join(',')}]` : ''
  const value = `{"format":"${TAIL_FORMAT}","next":${first + stored},"last":${records.at(-1)}${earlier}}`
  rows.store(
    keys.tail,
    applyPut(keys.tail, rows.state(keys.tail), encoder.encode(value), null, undefined, now),
  )
  return { first, stored }
}

/**
 * `queueClaim`: with `previous`, its acknowledgement and the kept lease
 * renewed for the next event (or, with nothing more, a plain ack releasing
 * it); without, the head event's delivery lease (`decisions.grantDelivery`)
 * and the attempt recorded in the head record. `null` when empty.
 */
export function claimStep(
  rows: QueueRows,
  keys: NativeQueueKeys,
  claim: NativeQueueClaim,
  decisions: QueueDecisions,
): NativeQueueClaimed | null {
  const { now } = rows
  const headState = rows.state(keys.head)
  const q = queueState(rows, keys)
  const previous = claim.previous
  if (previous !== undefined) {
    // The acknowledgement of `previous`: its lease current (LEASE_LOST), then the head
    // record the version it wrote (PRECONDITION_FAILED), as its fenced put checks them.
    const fenced = { lease: previous.lease, ifMatch: previous.headVersion }
    const at = previous.seq + 1
    const iterations = q.iterations + 1
    const done = queueEventKey(keys, previous.seq)
    if (at >= q.next) {
      // Nothing more: a plain ack (the head moved, the event gone, the lease released).
      const json = headJson(at, 0, iterations, null)
      const written = applyPut(keys.head, headState, json, null, fenced, now)
      rows.store(keys.head, applyRelease(written, previous.lease) ?? written)
      remove(rows, done)
      return null
    }
    // The kept lease renewed by renewLease's rule (LEASE_LOST when stale).
    const renewed = applyRenew(headState, previous.lease, now)
    const { lease } = renewed
    const json = headJson(at, 1, iterations, claimOf(at, lease, claim.claimedAt))
    const written = applyPut(keys.head, renewed.state, json, null, { ...fenced, lease }, now)
    const event = headEvent(rows, keys, at)
    rows.store(keys.head, written)
    remove(rows, done)
    return claimed(event, json, written, lease)
  }
  if (q.head >= q.next) return null
  const event = headEvent(rows, keys, q.head)
  const granted = decisions.grantDelivery(keys.head, headState, claim.holder, claim.ttlMs, now)
  // Leftover of an ack that crashed between its writes (generic path): gone before the claim.
  if (q.head > 0) remove(rows, queueEventKey(keys, q.head - 1))
  const { lease } = granted
  const json = headJson(
    q.head,
    q.attempts + 1,
    q.iterations,
    claimOf(q.head, lease, claim.claimedAt),
  )
  const written = applyPut(keys.head, granted.state, json, null, { lease }, now)
  rows.store(keys.head, written)
  return claimed(event, json, written, lease)
}

/**
 * `queueSettle`: the head record written fenced by the lease and version,
 * the lease released, the event removed (`removeEvent`, or none).
 */
export function settleStep(
  rows: QueueRows,
  keys: NativeQueueKeys,
  settle: {
    readonly lease: Lease
    readonly headVersion: string
    readonly head: Uint8Array
    readonly removeEvent: string | null
  },
): void {
  const fenced = { lease: settle.lease, ifMatch: settle.headVersion }
  const written = applyPut(keys.head, rows.state(keys.head), settle.head, null, fenced, rows.now)
  rows.store(keys.head, applyRelease(written, settle.lease) ?? written)
  if (settle.removeEvent !== null) remove(rows, settle.removeEvent)
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
  return encoder.encode(JSON.stringify({ format: HEAD_FORMAT, head, attempts, iterations, claim }))
}

/** `queueClaim`'s result from what the transaction wrote. */
function claimed(event: Uint8Array, head: Uint8Array, written: KeyState, lease: Lease) {
  return { event, head, headVersion: written.version as string, lease }
}

/** `metaOf` with the value: what `QueueRows.read` returns for a state. */
export function storedValueOf(key: string, state: KeyState): StoredValue | null {
  const meta = metaOf(key, state)
  return meta === null ? null : { value: state.value, meta }
}
