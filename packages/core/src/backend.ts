import type {
  ChangeHint,
  ChangeNotificationCapability,
  WatchOptions,
} from './change-notification.js'
import type { Lease } from './lease.js'
import type { NativeQueue, NativeQueueCapability } from './native-queue.js'

export type { Lease } from './lease.js'

/**
 * The Backend contract, version 1. This file is the specification: a third
 * party implements a backend from these types and their comments, then proves
 * it with `@agent-state/contract`.
 *
 * Every operation is asynchronous and reports failure only by rejecting with
 * an `AgentStateError` (see `errors.ts` for the codes).
 */

/** The contract version implemented by this package. */
export const CONTRACT_VERSION = 1 as const

/**
 * The `maxValueBytes` every backend of this repository claims unless its
 * options say otherwise: 64 MiB. A backend's own limit is in its
 * `capabilities`; this is only the shared default of their options.
 */
export const DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024

/**
 * Who wrote a value. Stored with every value as conflict metadata, so a
 * reader can tell which agent, stage, session or worker wrote it last.
 */
export interface WriterIdentity {
  /** Stable id of the writing process or agent. Required, 1 to 256 characters. */
  readonly writerId: string
  /** The pipeline stage that wrote, if any. */
  readonly stageId?: string
  /** The session the write belongs to, if any. */
  readonly sessionId?: string
  /** The worker that wrote, if any. */
  readonly workerId?: string
}

/** Metadata of a stored value. */
export interface ValueMeta {
  /** The key, exactly as given to `put`. */
  readonly key: string
  /**
   * Opaque version, compared for equality only. It changes on every
   * successful write (also when the bytes are identical) and is never reused
   * for this key, also after delete and re-create.
   */
  readonly version: string
  /** Size of the value in bytes. */
  readonly size: number
  /** Who wrote the value, or `null` when the write named no writer. */
  readonly writer: WriterIdentity | null
  /**
   * When the value was written, in milliseconds since the epoch, on the backend's lease clock
   * (an injected `host` clock included): docs/contract.md, Values and metadata.
   */
  readonly updatedAt: number
}

/** A value with its metadata, as returned by `get`. */
export interface StoredValue {
  /** The complete value; never a partial one. */
  readonly value: Uint8Array
  readonly meta: ValueMeta
}

/** Options of `put`. `ifMatch` and `ifNoneMatch` are mutually exclusive. */
export interface PutOptions {
  /** Compare-and-set: write only if the current version equals this one. Fails on a missing key. */
  readonly ifMatch?: string
  /** Create only: write only if the key holds no value. */
  readonly ifNoneMatch?: '*'
  /** Identity stored as conflict metadata. */
  readonly writer?: WriterIdentity
  /**
   * Fenced write: the write succeeds only while this lease is the key's
   * current, unexpired lease. Checked in the same atomic step as the write.
   */
  readonly lease?: Lease
  /**
   * Fenced by another key's lease: the write succeeds only while this lease,
   * held on a different key, is that key's current, unexpired lease, checked
   * in the same atomic step as the write (so an `acquireLease` of that key
   * that supersedes it is ordered after every write it fenced, and a write
   * started after the supersession is `LEASE_LOST`). Only on a backend that
   * claims {@link Capabilities.crossKeyFence}; elsewhere `UNSUPPORTED`, never
   * ignored. Not with `lease`, and not on its own key (`INVALID_ARGUMENT`):
   * the written key's own lease rules still hold (`LEASE_HELD` while it has
   * a live lease). docs/contract.md, Leases and fencing.
   */
  readonly fence?: Lease
}

/** Options of `delete`. */
export interface DeleteOptions {
  /** Delete only if the current version equals this one. Fails on a missing key. */
  readonly ifMatch?: string
  /** Fenced delete; see {@link PutOptions.lease}. */
  readonly lease?: Lease
}

/** Options of `list`. */
export interface ListOptions {
  /** Plain string prefix: `"fo"` matches `"foo/x"`. */
  readonly prefix?: string
  /** Opaque, exclusive cursor from a previous page. */
  readonly cursor?: string
  /**
   * Page size: at most this many entries plus prefixes (delimiter groups count toward it).
   * 1 to 10 000, default 1000. docs/contract.md, Listing.
   */
  readonly limit?: number
  /** Only `'/'`: keys with a further `/` after the prefix are grouped into `prefixes`. */
  readonly delimiter?: '/'
}

/** One key in a listing page. */
export interface ListEntry {
  readonly key: string
  readonly version: string
  /** Present where the backend has it cheaply. */
  readonly size?: number
  /** Present where the backend has it cheaply. */
  readonly updatedAt?: number
}

/** One page of a listing. */
export interface ListPage {
  /** Keys in ascending UTF-8 byte order. */
  readonly entries: readonly ListEntry[]
  /** With a delimiter: the distinct groups, each ending in the delimiter, in byte order. */
  readonly prefixes?: readonly string[]
  /** Present when more may follow; pass it back to get the next page. */
  readonly cursor?: string
}

/** Options of `acquireLease`. */
export interface AcquireLeaseOptions {
  /** Who is acquiring, 1 to 256 characters. */
  readonly holder: string
  /** Time-to-live in milliseconds, 1 ms to 24 h. */
  readonly ttlMs: number
}

/**
 * Whose clock decides lease expiry:
 * - `server`: the storage server's clock (Redis `TIME`);
 * - `host`: the local clock of the process checking it (injectable in tests);
 * - `observer`: a contender judges expiry on its own monotonic clock, from
 *   when it first observed the lease unchanged.
 */
export type LeaseClock = 'server' | 'host' | 'observer'

/**
 * What a backend guarantees. Declared, never guessed: the contract suite runs
 * the tests a capability enables and reports the others as skipped.
 */
export interface Capabilities {
  /** Acknowledged writes survive `close()` and a process crash. */
  readonly durable: boolean
  /** Instances in several processes on one host may share the storage safely. */
  readonly multiProcess: boolean
  /** Instances on several hosts may share the storage safely. */
  readonly multiHost: boolean
  readonly leaseClock: LeaseClock
  /** Largest key in UTF-8 bytes; at least 1024 for a conforming backend. */
  readonly maxKeyBytes: number
  /** Largest value in bytes. */
  readonly maxValueBytes: number
  /**
   * Change notification (see {@link Backend.watch}): its mode and the
   * worst-case delay from a write's acknowledgement to its hint. Absent: not
   * claimed, and `watch` may be absent too.
   */
  readonly changeNotification?: ChangeNotificationCapability
  /**
   * Daemon queue operations as one atomic server-side step each (see
   * {@link Backend.nativeQueue}). Absent: not claimed; queues use the generic path.
   */
  readonly nativeQueue?: NativeQueueCapability
  /**
   * `put` accepts {@link PutOptions.fence}: a write fenced by a lease on
   * another key of the same namespace. Absent or `false`: not claimed, and
   * such a `put` is `UNSUPPORTED`.
   */
  readonly crossKeyFence?: boolean
}

/**
 * A storage backend. Implement it natively, or implement the smaller
 * {@link RecordStore} and wrap it with `createRecordBackend`.
 */
export interface Backend {
  readonly contractVersion: typeof CONTRACT_VERSION
  /** Short name for messages and reports, for example `"fs"`. */
  readonly name: string
  readonly capabilities: Capabilities

  /** The value and its meta, or `null` when the key holds no value. */
  get(key: string): Promise<StoredValue | null>
  /**
   * Reads several keys in one call, optional (callers use core's `getMany(backend, keys)`,
   * which falls back to concurrent `get`s). Resolves one entry per key, in the order of
   * `keys`: `null` for a key with no value, otherwise exactly what `get` of that key would
   * have returned at some instant during the call. No snapshot across keys is promised: two
   * entries may come from different instants. Duplicates are allowed, each with its own copy
   * of the value. The argument is checked before anything is read: more than
   * `MAX_GET_MANY_KEYS` (1000) keys is `INVALID_ARGUMENT`, then any invalid key is
   * `INVALID_KEY` (context `index`). A corrupt entry fails the whole call with `CORRUPT`,
   * never a wrong or missing value; any other failure rejects the whole call too
   * (docs/contract.md, Multi-key reads).
   */
  getMany?(keys: readonly string[]): Promise<(StoredValue | null)[]>
  /** The meta, or `null` when the key holds no value. */
  head(key: string): Promise<ValueMeta | null>
  /**
   * Atomically replaces the value. Order of checks: key and arguments
   * (`INVALID_KEY`, `INVALID_ARGUMENT`, `VALUE_TOO_LARGE`, then `UNSUPPORTED`
   * for a `fence` the backend does not claim), then the fence (`LEASE_LOST`
   * when it is stale), then the lease
   * (`LEASE_HELD` when another live lease exists and none was given,
   * `LEASE_LOST` when the given one is stale), then the precondition
   * (`PRECONDITION_FAILED` with `context.current`: the current meta or null).
   * A failed call stores nothing.
   */
  put(key: string, value: Uint8Array, options?: PutOptions): Promise<ValueMeta>
  /**
   * Removes the value; resolves whether one existed. Idempotent. Checks as `put`.
   * The key's lease and fencing counter are not removed.
   */
  delete(key: string, options?: DeleteOptions): Promise<boolean>
  /** One page of keys; see {@link ListOptions}. Internal records never appear. */
  list(options?: ListOptions): Promise<ListPage>

  /** Takes the key's lease, or throws `LEASE_HELD` with `context.holder` when a live one exists. */
  acquireLease(key: string, options: AcquireLeaseOptions): Promise<Lease>
  /**
   * Extends a lease that is still current and unexpired: the new `expiresAt`
   * is the renewal time plus its `ttlMs` (not the old `expiresAt` plus
   * `ttlMs`), keeping its token (docs/contract.md, Leases and fencing).
   * Throws `LEASE_LOST` otherwise, also with no contender.
   */
  renewLease(lease: Lease): Promise<Lease>
  /**
   * Releases the lease if it is still the key's current one (same token);
   * resolves whether it was. Never removes a newer holder's lease. A stale
   * lease (already released, or superseded by a newer acquisition, whoever
   * the holder) resolves `false` and never throws `LEASE_LOST`. An expired
   * lease that nobody took over is still the current one: it is removed and
   * `true` is returned (which says nothing about the time after expiry; renew
   * or a fenced write tells a holder whether it still holds the key). Tokens
   * decide, never holder names.
   */
  releaseLease(lease: Lease): Promise<boolean>
  /** The key's live lease, or `null`. */
  getLease(key: string): Promise<Lease | null>

  /**
   * Hints of changes under `prefix` (byte prefix; `""` watches the whole
   * namespace), present when `capabilities.changeNotification` is claimed.
   * The first hint is always `resync`, delivered once the watch is
   * established: every write or delete acknowledged after the watcher
   * received it, by any instance in any process, is followed by a hint
   * naming its key (or a prefix containing it, or a `resync`) within
   * `maxDelayMs`, and a read started after that hint sees that write or a
   * newer state. Hints may be coalesced, duplicated and spurious; when the
   * backend cannot be sure it delivered every hint (a dropped connection, an
   * overflowed queue) it sends `resync`, never silence. Lease operations
   * give no hint. Aborting `signal`, `return()` (a `break`) or `close()`
   * ends the iteration and releases the watch's handles. An invalid prefix
   * (`INVALID_ARGUMENT`) or a closed backend (`CLOSED`) rejects the first
   * `next()`. The iterable is single-use.
   */
  watch?(prefix: string, options?: WatchOptions): AsyncIterable<ChangeHint>

  /** The native daemon queue operations; present exactly when `capabilities.nativeQueue` is. */
  readonly nativeQueue?: NativeQueue

  /**
   * Removes every record of this instance's namespace, internal ones
   * included (values, leases, fencing counters). Optional: meant for tests
   * and `agent-state verify`, which must leave nothing behind.
   */
  destroy?(): Promise<void>
  /**
   * Releases this instance's clients and handles; what it shares with other
   * live instances stays open for them (docs/contract.md, Errors). Later calls
   * fail with `CLOSED`. Idempotent.
   */
  close(): Promise<void>
}
