import type { Capabilities } from './backend.js'

/**
 * The small primitive a third party implements to get the whole Backend
 * contract from `createRecordBackend`: a store of opaque records with an
 * atomic read, a conditional write and an ordered scan.
 *
 * Every record a key's state lives in is one record (value, writer, lease and
 * fencing counter together), so a conditional write of that record is the one
 * atomic step that checks a lease and writes a value.
 */

/** A record as read from the store. */
export interface VersionedRecord {
  /** The bytes last written, complete. */
  readonly data: Uint8Array
  /**
   * The store's version of the record: opaque, changes on every write, never
   * reused for the key (an ETag over unique bytes, a counter, a random id).
   */
  readonly version: string
}

/** The condition of a record write. */
export type RecordCondition = { readonly absent: true } | { readonly version: string }

/** One record from an ordered scan. */
export interface ScannedRecord {
  readonly key: string
  readonly data: Uint8Array
}

/** Options of {@link RecordStore.scan}. */
export interface RecordScanOptions {
  /** Only keys starting with this string. */
  readonly prefix: string
  /** Only keys strictly greater than this one, in UTF-8 byte order. */
  readonly after?: string
  /** At most this many records. */
  readonly limit: number
}

/**
 * The record primitive. Keys given to it are already valid contract keys.
 * Errors must be `AgentStateError`s; in particular `write` throws
 * `PRECONDITION_FAILED` when the condition does not hold, and nothing else
 * for that case.
 */
export interface RecordStore {
  /** Short name, reported as the Backend's name. */
  readonly name: string
  /** What the store guarantees; the lease clock is the host clock of `createRecordBackend`. */
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
  /** The record, or `null` when there is none. Never a partial record. */
  read(key: string): Promise<VersionedRecord | null>
  /**
   * Atomically writes the record if the condition holds at the moment of the
   * write, across every instance sharing the store. Resolves the new version.
   */
  write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string>
  /** Records in ascending UTF-8 byte order of their keys. `done` says nothing follows. */
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
  /** Removes every record of this store's namespace. Optional. */
  destroy?(): Promise<void>
  /** Releases handles. */
  close(): Promise<void>
}
