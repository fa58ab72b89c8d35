import type { Capabilities } from './backend.js'
import type { ChangeHint, WatchOptions } from './change-notification.js'
import { AgentStateError } from './errors.js'
import { quoteForMessage } from './keys.js'

/**
 * The small primitive a third party implements to get the whole Backend
 * contract from `createRecordBackend`: a store of opaque records with an
 * atomic read, a conditional write and an ordered scan.
 *
 * Every record a key's state lives in is one record (value, writer, lease and
 * fencing counter together), so a conditional write of that record is the one
 * atomic step that checks a lease and writes a value.
 */

/**
 * How many bytes a record may exceed its value by. `createRecordBackend`
 * stores a key's value, writer, lease and fencing counter as one record: the
 * value plus a header that core's codec keeps below this bound (the writer's
 * four ids and the lease holder are at most 256 characters each). A store
 * declaring `maxValueBytes: N` must therefore accept records of up to
 * `N + RECORD_OVERHEAD_BYTES` bytes.
 */
export const RECORD_OVERHEAD_BYTES = 16 * 1024

/**
 * The error of a {@link RecordStore} `write` or `remove` whose condition does
 * not hold (`PRECONDITION_FAILED`, nothing stored): `createRecordBackend`
 * re-reads the record and tries again on exactly this code.
 */
export function recordChanged(key: string): AgentStateError {
  return new AgentStateError('PRECONDITION_FAILED', `Record of ${quoteForMessage(key)} changed`, {
    context: { key },
  })
}

/** A record as read from the store. */
export interface VersionedRecord {
  /**
   * The bytes last written, complete, and the caller's own: mutating them
   * must not change the stored record (never a view of the store's storage).
   */
  readonly data: Uint8Array
  /**
   * The store's version of the record: opaque, changes on every write (also
   * of identical bytes), never reused for the key by any instance sharing the
   * store (an ETag over unique bytes, a shared counter, a random id; a
   * per-instance counter is wrong). Versions are NOT required to stay unique
   * across `destroy()`: destroy ends the namespace's history (its fencing
   * counters go with it), so nobody may keep a version across it.
   */
  readonly version: string
}

/**
 * The condition of a record write: `{ absent: true }` holds when the key has
 * no record at all; `{ version }` holds when the key's record has exactly that
 * version (never on a missing record).
 */
export type RecordCondition = { readonly absent: true } | { readonly version: string }

/** One record from an ordered scan. */
export interface ScannedRecord {
  /** The record's key, exactly as written. */
  readonly key: string
  /** The record's complete bytes, the caller's own (as {@link VersionedRecord.data}). */
  readonly data: Uint8Array
}

/** Options of {@link RecordStore.scan}. */
export interface RecordScanOptions {
  /**
   * Only keys starting with this string (`""`: every key of the namespace).
   * Both bounds matter: no key before the prefix, and none after its range
   * (for prefix `"a/"`, `"a0"` and `"b"` are out).
   */
  readonly prefix: string
  /**
   * Only keys strictly greater than this one, in UTF-8 byte order: `after`
   * itself is never returned. It need not be a stored key, may sort before
   * the prefix (then the scan starts at the prefix) and may end in
   * U+10FFFF (core skips a whole group that way).
   */
  readonly after?: string
  /** At most this many records (1 or more). */
  readonly limit: number
}

/**
 * The record primitive. Keys given to it are already valid contract keys
 * (`createRecordBackend` validates them), so a store never sees an invalid
 * key and needs no key checks of its own.
 *
 * **Namespaces.** A store instance serves one namespace (the `namespace`
 * given to your factory): instances of the same namespace on the same
 * storage see each other's records; instances of different namespaces never
 * see, overwrite or list each other's records, also for equal keys.
 *
 * **Errors.** Every failure is an `AgentStateError` (raw client errors only as
 * `cause`), with these codes:
 * - `write` whose condition does not hold: `PRECONDITION_FAILED`, and nothing
 *   stored (`createRecordBackend` re-reads and retries on exactly this code;
 *   any other code fails the operation);
 * - a record over the store's size limit (see {@link RECORD_OVERHEAD_BYTES}):
 *   `VALUE_TOO_LARGE`;
 * - bytes the store cannot make sense of (a damaged file): `CORRUPT`;
 * - the service is down or refused the request before doing anything:
 *   `UNAVAILABLE`; a request that may have landed (a timeout after sending):
 *   `INDETERMINATE`;
 * - calls after `close()`: `CLOSED` is recommended (`createRecordBackend`
 *   already refuses them itself).
 *
 * `describeRecordStoreContract` in `@agent-state/contract` tests all of this
 * on the primitive itself, naming the method at fault.
 */
export interface RecordStore {
  /** Short name, reported as the Backend's name. */
  readonly name: string
  /**
   * What the store guarantees; the lease clock is the host clock of
   * `createRecordBackend`. `maxValueBytes` is the largest VALUE a Backend over
   * this store accepts (the Backend reports it unchanged); the store itself
   * must accept records of up to `maxValueBytes + RECORD_OVERHEAD_BYTES`.
   */
  readonly capabilities: Omit<Capabilities, 'leaseClock'>
  /**
   * `true` only if a record's version changes whenever its stored bytes
   * change, whoever changes them, the way S3's ETag does. `createRecordBackend`
   * then lets a `put` write conditionally on the version it last saw without
   * reading first: a stale, replaced or tampered record fails the condition
   * and the put reads afresh. A store whose version lives beside the bytes (a
   * header an outside edit can leave intact) must leave this unset.
   */
  readonly versionChangesWithBytes?: boolean
  /**
   * The record, or `null` when there is none. Never a partial record; its
   * `version` is the one the write that stored it resolved.
   */
  read(key: string): Promise<VersionedRecord | null>
  /**
   * Atomically writes the record if the condition holds at the moment of the
   * write, across every instance sharing the store (of N concurrent writers
   * with the same condition exactly one wins). Resolves the new version. The
   * store keeps its own copy: the caller may reuse `data` afterwards. `data`
   * may be a `Buffer` or any view, and a `Buffer`'s `slice()` is a view of
   * the caller's memory, not a copy (copy with `new Uint8Array(data)`).
   */
  write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string>
  /**
   * Records in ascending UTF-8 byte order of their keys (compare bytes, not
   * UTF-16 code units), at most `limit`. `done: true` promises that no record
   * of the prefix follows the last one returned; a full page may say
   * `done: false` even when nothing follows.
   */
  scan(options: RecordScanOptions): Promise<{ records: readonly ScannedRecord[]; done: boolean }>
  /**
   * Optional: removes the record outright, atomically, only if it is still at
   * `condition.version` at the moment of the removal, across every instance
   * sharing the store; throws `PRECONDITION_FAILED` (and nothing else for that
   * case) when it is not, and then removes nothing. Afterwards `read` returns
   * `null` and a `write` on `{ absent: true }` creates the record afresh.
   *
   * A store that has it must still never reuse a version for the key: the
   * version of a record created after a removal differs from every version
   * the key's earlier records had (a counter that survives the removal, or a
   * process-unique prefix with a counter, or enough randomness), because a
   * stale `{ version }` condition must never match the new record.
   *
   * `createRecordBackend` calls it only for a `delete` of a key that has
   * never had a lease (fencing counter 0), so a tombstone is kept exactly
   * where the contract needs one (fencing tokens must keep growing after a
   * delete), and a delete elsewhere costs a removal instead of a write.
   */
  remove?(key: string, condition: { readonly version: string }): Promise<void>
  /**
   * Optional change notification, with `capabilities.changeNotification`
   * claimed: the Backend's `watch` (see `Backend.watch` for the rules, which
   * apply to records: a hint follows every acknowledged `write` and
   * `remove`). `createRecordBackend` validates the prefix, refuses it after
   * `close()`, ends it on `close()`, and passes the signal down: the store's
   * iteration must end and release its handles when the signal aborts.
   * Hints for lease-only record writes are allowed (hints may be spurious).
   * Without this method a claimed `changeNotification` is dropped from the
   * Backend's capabilities.
   */
  watch?(prefix: string, options: WatchOptions): AsyncIterable<ChangeHint>
  /**
   * Removes every record of this store's namespace, and only of it. Optional
   * (tests and `agent-state verify` use it to leave nothing behind).
   */
  destroy?(): Promise<void>
  /** Releases handles. */
  close(): Promise<void>
}
