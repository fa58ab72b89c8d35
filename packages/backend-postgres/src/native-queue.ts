import {
  appendStep,
  assertLeaseShape,
  assertQueueEvents,
  assertValidKey,
  checkAcquire,
  checkQueueKeys,
  claimStep,
  type KeyState,
  MAX_KEY_BYTES,
  type NativeQueue,
  type NativeQueueCapability,
  type NativeQueueKeys,
  type QueueRows,
  queueEventKey,
  queueRecordCorrupt,
  settleStep,
  storedValueOf,
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
   * write is `INDETERMINATE`). A lost connection is `INDETERMINATE` only
   * when `mayHaveApplied()` says so when it is lost, `UNAVAILABLE` otherwise.
   */
  update<T>(
    operation: string,
    key: string,
    hintKeys: () => readonly string[],
    body: (client: pg.ClientBase) => Promise<{ result: T; hinted?: Promise<unknown> }>,
    mayHaveApplied: () => boolean,
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

/**
 * Runs one queue operation as ONE transaction in two round trips (see
 * queue-statements.ts): the locks and reads pipelined behind `BEGIN`, then
 * `body` applies core's rules to the rows read, then the writes, `COMMIT`
 * and the change hints of the values written, pipelined. A throw of `body`
 * (a refusal: `LEASE_HELD`, `LEASE_LOST`, `PRECONDITION_FAILED`, `CORRUPT`)
 * rolls back having written nothing.
 *
 * A connection lost (or a foreign answer, answer-check.ts) in the first round
 * trip is `UNAVAILABLE`: it only locked and read, its writes and `COMMIT` were
 * never sent, and a transaction without its `COMMIT` never commits. Once they
 * were sent, the commit's outcome is unknown: `INDETERMINATE`.
 */
function transaction<T>(
  db: QueueConnection,
  operation: string,
  key: string,
  plan: Plan,
  keys: NativeQueueKeys,
  body: (rows: QueueRows) => T,
): Promise<T> {
  const { sql, namespace } = db
  let changed: string[] = []
  let commitSent = false
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
        send(sql.begin)
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
        // A row without a key of its own is not a wanted key's: the key it was wanted for is
        // then missing, which `state` reports (never a crash decoding a row of no key).
        for (const row of rows)
          if (typeof row.wanted === 'string') loaded.set(row.wanted, decodeState(row.wanted, row))
        const written = new Map<string, KeyState>()
        const state = (k: string): KeyState => {
          const found = written.get(k) ?? loaded.get(k)?.state
          // A key the load did not find by the records' numbers: they do not agree.
          if (found === undefined) throw queueRecordCorrupt(k)
          return found
        }
        const result = body({
          now,
          state,
          read: (k) => storedValueOf(k, state(k)),
          store: (k, next) => {
            state(k)
            written.set(k, next)
          },
        })
        changed = []
        // From here on the writes and COMMIT are on their way: the outcome may be a commit.
        commitSent = true
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
        send(sql.commit)
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
        await client.query(sql.rollback).catch(() => {})
        throw error
      }
    },
    () => commitSent,
  )
}

/**
 * The native daemon queue of one PostgreSQL backend instance: each
 * operation is one transaction (`transaction` above) that locks the queue's
 * head or tail row and runs core's step of the operation (`appendStep`,
 * `claimStep`, `settleStep`: core's `put`, lease and `delete` rules on every
 * record it touches, leases judged on the database clock) over the rows it
 * read; a refused operation writes nothing. The records are the runtime's
 * (docs/runtime/daemons.md, "Records").
 */
export function postgresNativeQueue(db: QueueConnection): NativeQueue {
  const decisions = { appendRoom, grantDelivery }
  const checkKeys = (keys: NativeQueueKeys) => {
    db.assertOpen()
    checkQueueKeys(keys, MAX_KEY_BYTES)
  }
  return {
    async queueAppend(keys, append) {
      checkKeys(keys)
      assertQueueEvents(append)
      const plan = {
        exclusive: [keys.tail],
        shared: [keys.head],
        keys: [keys.tail, keys.head],
        fromTail: append.events.length,
        fromHead: false,
      }
      return transaction(db, 'queueAppend', keys.tail, plan, keys, (rows) =>
        appendStep(rows, keys, append, decisions),
      )
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
            : [queueEventKey(keys, previous.seq), queueEventKey(keys, previous.seq + 1)]),
        ],
        fromTail: 0,
        fromHead: previous === undefined,
      }
      return transaction(db, 'queueClaim', keys.head, plan, keys, (rows) =>
        claimStep(rows, keys, claim, decisions),
      )
    },

    async queueSettle(keys, settle) {
      checkKeys(keys)
      assertLeaseShape(settle.lease)
      const removeEvent = settle.removeEvent
      if (removeEvent !== null) assertValidKey(removeEvent, MAX_KEY_BYTES)
      // A copy: the caller may reuse its buffer once the call returns.
      const copied = { ...settle, head: settle.head.slice() }
      const plan = {
        exclusive: [keys.head],
        shared: [],
        keys: removeEvent === null ? [keys.head] : [keys.head, removeEvent],
        fromTail: 0,
        fromHead: false,
      }
      await transaction(db, 'queueSettle', keys.head, plan, keys, (rows) =>
        settleStep(rows, keys, copied),
      )
    },
  }
}
