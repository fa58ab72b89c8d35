import {
  ABSENT_STATE,
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
  type QueueRows as StepRows,
  type StoredValue,
  settleStep,
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

/**
 * The native daemon queue of one SQLite backend instance: each operation is
 * one body in the group commit, so one transaction, and the triggers and
 * claims of one process in one event-loop turn share its fsync. The bodies
 * run core's step of the operation (`appendStep`, `claimStep`,
 * `settleStep`: core's `put`, lease and `delete` rules on every record they
 * touch, exactly as `put`, `acquireLease`, `renewLease`, `releaseLease` and
 * `delete` would), so versions, revisions, the listing index and the
 * fencing counter are theirs, and a refused operation throws before it
 * writes (rolled back in any case). The records are the runtime's
 * (docs/runtime/daemons.md, "Records").
 */
export function sqliteNativeQueue(rows: QueueRows): NativeQueue {
  const decisions = { appendRoom, grantDelivery }
  /** Checks the queue's keys as every operation checks its key; the widest event key too. */
  function checkKeys(keys: NativeQueueKeys): void {
    rows.assertOpen()
    checkQueueKeys(keys, MAX_KEY_BYTES)
  }

  /**
   * The transaction's rows for core's steps: a key's row loaded when its state
   * is first asked for, kept until the key is stored (the body is synchronous
   * inside the transaction, so nothing else writes the row meanwhile: an
   * append asks for the tail's state twice, once to check its lease and once
   * to write it, and loads it once), and written against that row (each step
   * asks for a key's state before it stores it).
   */
  function stepRows(): StepRows {
    const loaded = new Map<string, LoadedState | undefined>()
    return {
      now: rows.clock(),
      state(key) {
        const row = loaded.has(key) ? loaded.get(key) : rows.load(key)
        loaded.set(key, row)
        return row?.state ?? ABSENT_STATE
      },
      read: (key) => rows.read(key),
      store(key, next) {
        rows.store(key, loaded.has(key) ? loaded.get(key) : rows.load(key), next)
        loaded.delete(key)
      },
    }
  }

  return {
    async queueAppend(keys, append) {
      checkKeys(keys)
      assertQueueEvents(append)
      const bytes = append.events.reduce((sum, event) => sum + event.length, 0)
      return rows.submit(
        'queueAppend',
        () => appendStep(stepRows(), keys, append, decisions),
        bytes,
      )
    },

    async queueClaim(keys, claim) {
      checkKeys(keys)
      checkAcquire(keys.head, { holder: claim.holder, ttlMs: claim.ttlMs }, MAX_KEY_BYTES)
      if (claim.previous !== undefined) assertLeaseShape(claim.previous.lease)
      return rows.submit('queueClaim', () => claimStep(stepRows(), keys, claim, decisions), 0)
    },

    async queueSettle(keys, settle) {
      checkKeys(keys)
      assertLeaseShape(settle.lease)
      if (settle.removeEvent !== null) assertValidKey(settle.removeEvent, MAX_KEY_BYTES)
      // A copy: the write happens later in this turn (group commit).
      const copied = { ...settle, head: settle.head.slice() }
      return rows.submit(
        'queueSettle',
        () => settleStep(stepRows(), keys, copied),
        copied.head.byteLength,
      )
    },
  }
}
