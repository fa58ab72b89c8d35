import {
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
  metaOf,
  type NativeQueue,
  type NativeQueueCapability,
  type NativeQueueKeys,
  quoteForMessage,
  type StoredValue,
} from '@agent-state/core'
import type pg from 'pg'
import type { QueueStatements } from './queue-statements.js'
import { appendRoom, grantDelivery } from './queue-steps.js'
import {
  decodeState,
  type LoadedState,
  leaseParams,
  type StateRow,
  valueParams,
} from './row-codec.js'

/** What this backend claims as `capabilities.nativeQueue`. */
export const POSTGRES_NATIVE_QUEUE: NativeQueueCapability = { version: 1 }

/** What the native queue needs of its backend instance (postgres-backend.ts). */
export interface QueueConnection {
  /**
   * Runs `body` on one pooled connection as the backend's writes run
   * (errors mapped; a write acknowledged only once its change hint, `hinted`,
   * committed: if the hint failed it is sent again for `hintKeys`, else the
   * write is `INDETERMINATE`).
   */
  update<T>(
    operation: string,
    key: string,
    hintKeys: () => readonly string[],
    body: (client: pg.ClientBase) => Promise<{ result: T; hinted?: Promise<unknown> }>,
  ): Promise<T>
  readonly sql: QueueStatements
  readonly namespace: string
  /** `lock_timeout` and `idle_in_transaction_session_timeout` of a queue transaction, in ms. */
  readonly lockTimeoutMs: number
  readonly idleInTransactionTimeoutMs: number
  /** Throws `CLOSED` once the backend is closed. */
  assertOpen(): void
}

/** Which rows a queue transaction locks and reads (see `QueueStatements.lock`, `.load`). */
interface Plan {
  readonly exclusive: readonly string[]
  readonly shared: readonly string[]
  /** Keys read whatever the records say. */
  readonly keys: readonly string[]
  /** How many event keys from the tail's `next` (an append's). */
  readonly fromTail: number
  /** Whether the event keys of the head's `head - 1` and `head` (a claim's). */
  readonly fromHead: boolean
}

/** The rows of one queue transaction: read under its locks, written at its commit. */
interface Rows {
  /** The database clock, read after the locks were taken. */
  readonly now: number
  /** A key's state as loaded; `CORRUPT` for a key the transaction did not load. */
  state(key: string): KeyState
  /** The key's value and meta, `null` when it holds none. */
  read(key: string): StoredValue | null
  /** Writes `next` at the commit (the key's last state wins). */
  store(key: string, next: KeyState): void
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
 * Runs one queue operation as ONE transaction in two round trips (see
 * queue-statements.ts): the locks and reads pipelined behind `BEGIN`, then
 * `body` applies core's rules to the rows read, then the writes, `COMMIT`
 * and the change hints of the values written, pipelined. A throw of `body`
 * (a refusal: `LEASE_HELD`, `LEASE_LOST`, `PRECONDITION_FAILED`, `CORRUPT`)
 * rolls back having written nothing.
 */
function transaction<T>(
  db: QueueConnection,
  operation: string,
  key: string,
  plan: Plan,
  keys: NativeQueueKeys,
  body: (rows: Rows) => T,
): Promise<T> {
  const { sql, namespace } = db
  let changed: string[] = []
  return db.update(
    operation,
    key,
    () => changed,
    async (client) => {
      db.assertOpen()
      const sent: Promise<unknown>[] = []
      const send = <R extends pg.QueryResultRow>(text: string, params?: unknown[]) => {
        const query = client.query<R>(text, params)
        sent.push(query)
        return query
      }
      /** Waits for every statement sent; the first failure is the transaction's. */
      const settle = async () => {
        const outcomes = await Promise.allSettled(sent.splice(0))
        const failed = outcomes.find((outcome) => outcome.status === 'rejected')
        if (failed !== undefined) throw (failed as PromiseRejectedResult).reason
      }
      try {
        send('BEGIN')
        send(sql.limits, [String(db.lockTimeoutMs), String(db.idleInTransactionTimeoutMs)])
        send(sql.lock, [namespace, plan.exclusive, plan.shared])
        const loading = send<StateRow & { wanted: string | null }>(sql.load, [
          namespace,
          plan.keys,
          keys.eventPrefix,
          keys.eventDigits,
          keys.tail,
          plan.fromTail,
          keys.head,
          plan.fromHead,
        ])
        await settle()
        const rows = (await loading).rows
        const now = Number(rows[0]?.now_ms)
        const loaded = new Map<string, LoadedState>()
        for (const row of rows)
          if (row.wanted !== null) loaded.set(row.wanted, decodeState(row.wanted, row))
        const written = new Map<string, KeyState>()
        const state = (k: string): KeyState => {
          const found = written.get(k) ?? loaded.get(k)?.state
          if (found === undefined) throw corrupt(k)
          return found
        }
        const result = body({
          now,
          state,
          read: (k) => {
            const s = state(k)
            const meta = metaOf(k, s)
            return meta === null ? null : { value: s.value, meta }
          },
          store: (k, next) => {
            state(k)
            written.set(k, next)
          },
        })
        changed = []
        for (const [k, next] of written) {
          const before = loaded.get(k) as LoadedState
          if (next.version !== before.state.version || next.revision !== before.state.revision) {
            changed.push(k)
          }
          if (next.version === null && next.lease === null && next.fence === 0) {
            if (before.rowVersion !== null) send(sql.remove, [namespace, k])
          } else {
            send(sql.store, [namespace, k, ...valueParams(next), ...leaseParams(next)])
          }
        }
        send('COMMIT')
        if (changed.length === 0) {
          await settle()
          return { result }
        }
        // The hints in a transaction of their own once the commit is done (statements.ts says why).
        const hinted = client.query(sql.announce, [namespace, changed]).then(
          () => undefined,
          (error: unknown) => error ?? new Error('change hint failed'),
        )
        try {
          await settle()
        } catch (error) {
          await hinted
          throw error
        }
        return { result, hinted }
      } catch (error) {
        await settle().catch(() => {})
        // Ends the transaction if it is still open (a refusal, a failed statement); the
        // connection goes back to the pool clean. On a dead connection this fails too: ignored.
        await client.query('ROLLBACK').catch(() => {})
        throw error
      }
    },
  )
}

/**
 * The native daemon queue of one PostgreSQL backend instance: each
 * operation is one transaction (`transaction` above) that locks the queue's
 * head or tail row, applies core's rules (`applyPut`, `applyAcquire`,
 * `applyRenew`, `applyRelease`, `applyDelete`) to every record it touches,
 * exactly as `put`, `acquireLease`, `renewLease`, `releaseLease` and
 * `delete` would, so versions, revisions, the fencing counter and leases
 * (judged on the database clock) are theirs, and a refused operation
 * writes nothing. The records are the runtime's (docs/runtime/daemons.md, "Records").
 */
export function postgresNativeQueue(db: QueueConnection): NativeQueue {
  /** Checks the queue's keys as every operation checks its key; the widest event key too. */
  function checkKeys(keys: NativeQueueKeys): void {
    db.assertOpen()
    assertValidKey(keys.head, MAX_KEY_BYTES)
    assertValidKey(keys.tail, MAX_KEY_BYTES)
    assertValidKey(`${keys.eventPrefix}${'9'.repeat(keys.eventDigits)}`, MAX_KEY_BYTES)
  }

  /** Deletes a record if it holds a value (an event record: never leased). */
  function remove(rows: Rows, key: string): void {
    const next = applyDelete(key, rows.state(key), undefined, rows.now)
    if (next !== undefined) rows.store(key, next)
  }

  /** The event record at `seq` as stored, or `CORRUPT` when missing or not the event of `seq`. */
  function headEvent(rows: Rows, keys: NativeQueueKeys, seq: number): Uint8Array {
    const key = eventKey(keys, seq)
    const found = rows.read(key)
    const record = decoded(found)
    if (found === null || record?.format !== EVENT_FORMAT || record.seq !== seq) throw corrupt(key)
    return found.value
  }

  /** The head and tail records' numbers, `CORRUPT` (the head's key) unless they decode. */
  function queueState(rows: Rows, keys: NativeQueueKeys) {
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
      const count = append.events.length
      if (count === 0) {
        throw new AgentStateError('INVALID_ARGUMENT', 'queueAppend needs at least one event')
      }
      const plan = {
        exclusive: [keys.tail],
        shared: [keys.head],
        keys: [keys.tail, keys.head],
        fromTail: count,
        fromHead: false,
      }
      return transaction(db, 'queueAppend', keys.tail, plan, keys, (rows) => {
        const { now } = rows
        // The tail is written with no lease, like a producer's put: a leased tail is refused first.
        checkWriteLease(keys.tail, rows.state(keys.tail), undefined, now)
        const tail = decoded(rows.read(keys.tail))
        const head = decoded(rows.read(keys.head))
        if (!(tail && head && isSeq(tail.next) && isSeq(head.head))) throw corrupt(keys.tail)
        const first = tail.next
        const stored = appendRoom(append.capacity, first, head.head, count, append.mode)
        if (stored === 0) return { first, stored: 0 }
        const records: string[] = []
        for (let i = 0; i < stored; i++) {
          const seq = first + i
          const json = `{"format":"${EVENT_FORMAT}","seq":${seq}${append.events[i]}`
          const key = eventKey(keys, seq)
          rows.store(
            key,
            applyPut(key, rows.state(key), encoder.encode(json), null, undefined, now),
          )
          records.push(json)
        }
        const earlier = stored > 1 ? `,"earlier":[${records.slice(0, -1).join(',')}]` : ''
        const value = `{"format":"agent-state/daemon-tail","next":${first + stored},"last":${records.at(-1)}${earlier}}`
        rows.store(
          keys.tail,
          applyPut(keys.tail, rows.state(keys.tail), encoder.encode(value), null, undefined, now),
        )
        return { first, stored }
      })
    },

    async queueClaim(keys, claim) {
      checkKeys(keys)
      checkAcquire(keys.head, { holder: claim.holder, ttlMs: claim.ttlMs }, MAX_KEY_BYTES)
      const previous = claim.previous
      if (previous !== undefined) assertLeaseShape(previous.lease)
      const plan = {
        exclusive: [keys.head],
        shared: [],
        keys: [
          keys.head,
          keys.tail,
          ...(previous === undefined
            ? []
            : [eventKey(keys, previous.seq), eventKey(keys, previous.seq + 1)]),
        ],
        fromTail: 0,
        fromHead: previous === undefined,
      }
      return transaction(db, 'queueClaim', keys.head, plan, keys, (rows) => {
        const { now } = rows
        const headState = rows.state(keys.head)
        const q = queueState(rows, keys)
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
        const granted = grantDelivery(keys.head, headState, claim.holder, claim.ttlMs, now)
        // Leftover of an ack that crashed between its writes (generic path): gone before the claim.
        if (q.head > 0) remove(rows, eventKey(keys, q.head - 1))
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
      })
    },

    async queueSettle(keys, settle) {
      checkKeys(keys)
      assertLeaseShape(settle.lease)
      const removeEvent = settle.removeEvent
      if (removeEvent !== null) assertValidKey(removeEvent, MAX_KEY_BYTES)
      // A copy: the caller may reuse its buffer once the call returns.
      const head = settle.head.slice()
      const plan = {
        exclusive: [keys.head],
        shared: [],
        keys: removeEvent === null ? [keys.head] : [keys.head, removeEvent],
        fromTail: 0,
        fromHead: false,
      }
      await transaction(db, 'queueSettle', keys.head, plan, keys, (rows) => {
        const written = applyPut(
          keys.head,
          rows.state(keys.head),
          head,
          null,
          { lease: settle.lease, ifMatch: settle.headVersion },
          rows.now,
        )
        rows.store(keys.head, applyRelease(written, settle.lease) ?? written)
        if (removeEvent !== null) remove(rows, removeEvent)
      })
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
