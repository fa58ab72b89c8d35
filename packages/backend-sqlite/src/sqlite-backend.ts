import { setTimeout as sleep } from 'node:timers/promises'
import {
  ABSENT_STATE,
  type AcquireLeaseOptions,
  AgentStateError,
  afterPosition,
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  assertLeaseShape,
  assertValidKey,
  type Backend,
  type Capabilities,
  type Clock,
  CONTRACT_VERSION,
  checkAcquire,
  checkDelete,
  checkFence,
  checkGetManyKeys,
  checkPut,
  collectListPage,
  type DeleteOptions,
  GROUPED_FIRST_BATCH,
  type KeyState,
  type Lease,
  type ListEntry,
  type ListOptions,
  type ListPage,
  liveLease,
  MAX_KEY_BYTES,
  metaOf,
  type NormalizedListOptions,
  normalizeListOptions,
  type PutOptions,
  parseBackendOptions,
  prefixRange,
  type StoredValue,
  setWatchInterrupt,
  systemClock,
  type ValueMeta,
  type WriterIdentity,
} from '@agent-state/core'
import {
  createSqliteWatcher,
  SQLITE_CHANGE_NOTIFICATION,
  SQLITE_NO_CHANNEL,
} from './change-notification.js'
import { openConnection } from './connection.js'
import { isBusy, toAgentStateError, withStoredSize } from './errors.js'
import { type GetManyDeps, readMany } from './get-many.js'
import { createGroupCommit } from './group-commit.js'
import { SQLITE_NATIVE_QUEUE, sqliteNativeQueue } from './native-queue.js'
import { MEMORY_PATH, type SqliteBackendOptions, sqliteOptionsSchema } from './options.js'
import {
  decodeLeaseRow,
  decodeListedRow,
  decodeMetaRow,
  decodeStateRow,
  decodeValueRow,
  decodeWholeMetaRow,
  decodeWholeValueRow,
  encodeState,
  type LoadedState,
  leaseParams,
  missingFromPrimaryIndex,
  type RawRow,
  UNVERIFIED,
  valueParams,
} from './row-codec.js'
import { prepareStatements } from './statements.js'

/**
 * The batches a listing asks of its scan (core's `ListBatching`): each row a
 * listing reads is a cell decode and a copy, so a big delimiter group is read
 * in a small batch before the scan skips it.
 */
const LIST_BATCHING = { groupedFirstBatch: GROUPED_FIRST_BATCH }

/**
 * Creates a backend on a SQLite database file (better-sqlite3 12.x).
 *
 * Every mutating operation is one `BEGIN IMMEDIATE` transaction with no
 * `await` inside: read the key's row, apply core's pure transition rules,
 * write the row. The write lock makes compare-and-set, leases and fenced
 * writes atomic across every connection and process on the host. Many
 * namespaces share one file, isolated by the namespace column of the
 * primary key.
 *
 * Opening is synchronous and may block up to `busyTimeoutMs` while another
 * process holds the lock.
 *
 * Every row carries CRC-32 checks verified on every read (see
 * `row-checks.ts`): damage is `CORRUPT`, never a wrong value.
 *
 * @throws `INVALID_ARGUMENT` for bad options, `CORRUPT` when the file is not a
 *   valid database, `INCOMPATIBLE_SCHEMA` when a newer release wrote it or it
 *   exists but is not an agent-state database (empty, foreign; the file is
 *   left untouched), `UNAVAILABLE` when it cannot be opened. Each names the file.
 *
 * @example
 * ```ts
 * const backend = createSqliteBackend({ path: './state.db', namespace: 'agent-1' })
 * const meta = await backend.put('notes/today', new TextEncoder().encode('hello'))
 * await backend.put('notes/today', bytes, { ifMatch: meta.version })
 * ```
 */
export function createSqliteBackend(options: SqliteBackendOptions): Backend {
  const resolved = parseBackendOptions(sqliteOptionsSchema, options, 'SQLite')
  const { namespace, busyTimeoutMs } = resolved
  const clock: Clock = resolved.clock ?? systemClock
  const inMemory = resolved.path === MEMORY_PATH
  const capabilities: Capabilities = {
    durable: !inMemory,
    multiProcess: !inMemory,
    multiHost: false,
    leaseClock: 'host',
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes: resolved.maxValueBytes,
    changeNotification: SQLITE_CHANGE_NOTIFICATION,
    nativeQueue: SQLITE_NATIVE_QUEUE,
    crossKeyFence: true,
  }
  const connection = openConnection(resolved.path, {
    synchronous: resolved.synchronous,
    busyTimeoutMs,
  })
  const { db } = connection
  let statements: ReturnType<typeof prepareStatements>
  try {
    statements = prepareStatements(db, namespace)
  } catch (error) {
    connection.release()
    throw toAgentStateError(error, { operation: 'open', mayHaveApplied: false })
  }
  let closed = false

  function closedError(): AgentStateError {
    return new AgentStateError('CLOSED', 'The sqlite backend is closed')
  }
  // Every mutation goes through the group commit (group-commit.ts): those of
  // one event-loop turn share one IMMEDIATE transaction, each with its own outcome.
  const writes = createGroupCommit({
    db,
    busyTimeoutMs,
    isClosed: () => closed,
    closedError,
  })

  /**
   * Runs the read `body` (synchronous). The first attempt runs straight away
   * and settles the returned promise without further hops; only a busy
   * failure goes on to {@link retryBusy}.
   */
  function run<T>(operation: string, body: () => T): Promise<T> {
    if (closed) return Promise.reject(closedError())
    const started = performance.now()
    try {
      return Promise.resolve(body())
    } catch (error) {
      if (!isBusy(error) || busyTimeoutMs <= performance.now() - started) {
        return Promise.reject(toAgentStateError(error, { operation, mayHaveApplied: false }))
      }
      return retryBusy(operation, body, started + busyTimeoutMs)
    }
  }

  /**
   * Waits for locks in slices: SQLite's busy handler blocks at most a slice,
   * then this loop yields to the event loop and tries again until `deadline`.
   */
  async function retryBusy<T>(operation: string, body: () => T, deadline: number): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const backoff = Math.min(2 ** Math.min(attempt, 4), 16) * (0.5 + Math.random())
      await sleep(Math.max(0, Math.min(backoff, deadline - performance.now())))
      if (closed) throw closedError()
      try {
        return body()
      } catch (error) {
        if (!isBusy(error) || deadline - performance.now() <= 0) {
          throw toAgentStateError(error, { operation, mayHaveApplied: false })
        }
      }
    }
  }

  /** Runs the argument checks, turning a synchronous throw into a rejection. */
  function checked<T>(check: () => void, then: () => Promise<T>): Promise<T> {
    try {
      if (closed) throw closedError()
      check()
    } catch (error) {
      return Promise.reject(error)
    }
    return then()
  }

  /** Writes what changed between the loaded state and `next`: a new row, the value columns, the lease columns. */
  function store(key: string, loaded: LoadedState | undefined, next: KeyState): void {
    if (loaded === undefined) {
      statements.insert(key, encodeState(namespace, key, next))
      return
    }
    const previous = loaded.state
    let stored: { size: number; valueCrc: number; writerText: string | null } = loaded
    if (next.version !== previous.version || next.revision !== previous.revision) {
      const params = valueParams(namespace, key, next)
      statements.writeValue(loaded.rowid, params)
      stored = { size: params[4], valueCrc: params[6], writerText: params[2] }
    }
    if (next.lease !== previous.lease || next.fence !== previous.fence) {
      statements.writeLease(loaded.rowid, leaseParams(namespace, key, next, stored))
    }
  }

  /** `null` for a key the primary key misses, or `CORRUPT` if the listing index says it is live. */
  function absent(key: string): null {
    if (statements.listedAsLive(key)) throw missingFromPrimaryIndex(key)
    return null
  }

  /**
   * A miss confirmed in one read transaction, so the re-read and {@link absent}'s index check see one
   * snapshot: as two autocommit statements, a row another process inserted between them looked corrupt.
   */
  const confirmMiss = db.transaction((key: string, read: () => unknown): unknown => {
    const row = read()
    if (row === undefined) absent(key)
    return row
  })

  /** The row `read` finds for `key`, or `undefined`; a miss goes through {@link confirmMiss}. */
  function rowOf<R>(key: string, read: () => R | undefined): R | undefined {
    const row = read()
    return row !== undefined ? row : (confirmMiss(key, read) as R | undefined)
  }

  /**
   * `get`'s and `head`'s read: the meta cells (and value) verified by
   * `meta_check`, else the whole row verified by `row_check` (see
   * `UNVERIFIED`), so a row no meta check covers reads as it did in schema 2.
   * `undefined` without a row (the listing index agreeing).
   */
  function readVerified<T>(
    key: string,
    read: (key: string) => RawRow | undefined,
    decode: (namespace: string, key: string, row: RawRow) => T | null | typeof UNVERIFIED,
    readWhole: (key: string) => RawRow | undefined,
    decodeWhole: (namespace: string, key: string, row: RawRow) => T | null,
  ): T | null {
    const row = rowOf(key, () => read(key))
    if (row === undefined) return null
    const decoded = decode(namespace, key, row)
    return decoded !== UNVERIFIED ? decoded : readWholeVerified(key, readWhole, decodeWhole)
  }

  /** {@link readVerified}'s second read: the whole row, verified by `row_check`. */
  function readWholeVerified<T>(
    key: string,
    readWhole: (key: string) => RawRow | undefined,
    decodeWhole: (namespace: string, key: string, row: RawRow) => T | null,
  ): T | null {
    const whole = rowOf(key, () => readWhole(key))
    return whole === undefined ? null : decodeWhole(namespace, key, whole)
  }

  /** The native `getMany`'s read (get-many.ts), with `get`'s whole-row read for an unverified row. */
  const getManyDeps: GetManyDeps = {
    namespace,
    readMany: statements.readMany,
    readWhole: (key) => readWholeVerified(key, statements.readWholeValue, decodeWholeValueRow),
  }

  /**
   * Applies `step` to the key's state in one IMMEDIATE transaction and stores
   * what it returns. The state is read without its value (no write needs the
   * bytes it replaces), so a failed precondition's `context.current` gets its
   * size from the row.
   */
  function update<T>(
    operation: string,
    key: string,
    step: (state: KeyState) => { next: KeyState | undefined; result: T },
    bytes = 0,
  ): Promise<T> {
    return submit(operation, () => applyStep(key, step), bytes)
  }

  /** {@link update}'s body, inside the transaction: load the key, apply `step`, store what it returns. */
  function applyStep<T>(
    key: string,
    step: (state: KeyState) => { next: KeyState | undefined; result: T },
  ): T {
    const loaded = load(key)
    let outcome: { next: KeyState | undefined; result: T }
    try {
      outcome = step(loaded === undefined ? ABSENT_STATE : loaded.state)
    } catch (error) {
      throw withStoredSize(error, loaded)
    }
    if (outcome.next !== undefined) store(key, loaded, outcome.next)
    return outcome.result
  }

  /**
   * A `put` fenced by another key's lease (`PutOptions.fence`). The fence
   * key's row is read in the same body as the write, so in the same IMMEDIATE
   * transaction (its own savepoint in a batch): no `acquireLease` of the fence
   * key, from this connection or any other, can commit between the check and
   * the write. An `acquireLease` that supersedes the fence is therefore
   * ordered either before the put (which then sees it: `LEASE_LOST`, rolled
   * back) or after its commit. The fence is checked before the written key is
   * loaded (the contract's order: fence, then the key's own lease, then the
   * precondition), with the same `now` as the own-lease check, so one clock
   * reading decides both, as in the memory backend. Kept apart from the plain
   * put so an unfenced put runs no extra statement.
   */
  function fencedPut(
    key: string,
    bytes: Uint8Array,
    writer: WriterIdentity | null,
    putOptions: PutOptions,
    fence: Lease,
  ): Promise<ValueMeta> {
    return submit(
      'put',
      () => {
        const now = clock()
        checkFence(key, fence, load(fence.key)?.state ?? ABSENT_STATE, now)
        return applyStep(key, (state) => {
          const next = applyPut(key, state, bytes, writer, putOptions, now)
          return { next, result: metaOf(key, next) as ValueMeta }
        })
      },
      bytes.byteLength,
    )
  }

  /** Runs `body` in the group commit; settles after the commit. */
  function submit<T>(operation: string, body: () => T, bytes = 0): Promise<T> {
    // After the commit: this connection's own writes do not move its data_version.
    return writes.submit(operation, body, bytes).then((result) => {
      watcher.committed()
      return result
    })
  }

  /** A key's state for a write (no value), `undefined` without a row (the listing index agreeing). */
  function load(key: string): LoadedState | undefined {
    const row = statements.readState(key)
    if (row === undefined) absent(key)
    return row === undefined ? undefined : decodeStateRow(namespace, key, row)
  }

  const backend: Backend = {
    contractVersion: CONTRACT_VERSION,
    name: 'sqlite',
    capabilities,

    get(key: string): Promise<StoredValue | null> {
      return checked(
        () => assertValidKey(key, MAX_KEY_BYTES),
        () =>
          run('get', () =>
            readVerified(
              key,
              statements.readValue,
              decodeValueRow,
              statements.readWholeValue,
              decodeWholeValueRow,
            ),
          ),
      )
    },

    getMany(keys: readonly string[]): Promise<(StoredValue | null)[]> {
      return checked(
        () => checkGetManyKeys(keys, MAX_KEY_BYTES),
        // No keys, no statement (core's getMany does not call here for none either).
        () =>
          keys.length === 0
            ? Promise.resolve([])
            : run('getMany', () => readMany(getManyDeps, keys)),
      )
    },

    head(key: string): Promise<ValueMeta | null> {
      return checked(
        () => assertValidKey(key, MAX_KEY_BYTES),
        () =>
          run('head', () =>
            readVerified(
              key,
              statements.readMeta,
              decodeMetaRow,
              statements.readWholeMeta,
              decodeWholeMetaRow,
            ),
          ),
      )
    },

    put(key: string, value: Uint8Array, putOptions?: PutOptions): Promise<ValueMeta> {
      let writer: WriterIdentity | null = null
      return checked(
        () => {
          writer = checkPut(key, value, putOptions, capabilities)
        },
        // A copy: the write happens later in this turn (group commit), and the
        // caller may reuse its buffer as soon as put returns.
        () => {
          const bytes = value.slice()
          if (putOptions?.fence !== undefined) {
            return fencedPut(key, bytes, writer, putOptions, putOptions.fence)
          }
          return update(
            'put',
            key,
            (state) => {
              const next = applyPut(key, state, bytes, writer, putOptions, clock())
              return { next, result: metaOf(key, next) as ValueMeta }
            },
            bytes.byteLength,
          )
        },
      )
    },

    delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      return checked(
        () => checkDelete(key, deleteOptions, MAX_KEY_BYTES),
        () =>
          update('delete', key, (state) => {
            const next = applyDelete(key, state, deleteOptions, clock())
            return { next, result: next !== undefined }
          }),
      )
    },

    list(listOptions?: ListOptions): Promise<ListPage> {
      let normalized: NormalizedListOptions | undefined
      return checked(
        () => {
          normalized = normalizeListOptions(listOptions)
        },
        () => {
          const options = normalized as NormalizedListOptions
          const range = prefixRange(options.prefix)
          return collectListPage(
            options,
            async (position, max) => {
              const scanRange = range === null ? null : afterPosition(range, position)
              if (scanRange === null) return { entries: [], done: true }
              const rows = await run('list', () => statements.scan(scanRange, max))
              const entries: ListEntry[] = new Array(rows.length)
              for (let i = 0; i < rows.length; i++)
                entries[i] = decodeListedRow(namespace, rows[i] as RawRow)
              return { entries, done: rows.length < max }
            },
            LIST_BATCHING,
          )
        },
      )
    },

    acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
      return checked(
        () => checkAcquire(key, leaseOptions, MAX_KEY_BYTES),
        () =>
          update('acquireLease', key, (state) => {
            const { state: next, lease } = applyAcquire(key, state, leaseOptions, clock())
            return { next, result: lease }
          }),
      )
    },

    renewLease(lease: Lease): Promise<Lease> {
      return checked(
        () => {
          assertLeaseShape(lease)
          assertValidKey(lease.key, MAX_KEY_BYTES)
        },
        () =>
          update('renewLease', lease.key, (state) => {
            const { state: next, lease: renewed } = applyRenew(state, lease, clock())
            return { next, result: renewed }
          }),
      )
    },

    releaseLease(lease: Lease): Promise<boolean> {
      return checked(
        () => {
          assertLeaseShape(lease)
          assertValidKey(lease.key, MAX_KEY_BYTES)
        },
        () =>
          update('releaseLease', lease.key, (state) => {
            const next = applyRelease(state, lease)
            return { next, result: next !== undefined }
          }),
      )
    },

    getLease(key: string): Promise<Lease | null> {
      return checked(
        () => assertValidKey(key, MAX_KEY_BYTES),
        () =>
          run('getLease', () => {
            const row = rowOf(key, () => statements.readWholeMeta(key))
            if (row === undefined) return null
            const lease = decodeLeaseRow(namespace, key, row)
            return lease === null ? null : liveLease(key, { ...ABSENT_STATE, lease }, clock())
          }),
      )
    },

    async destroy(): Promise<void> {
      await submit('destroy', () => statements.destroy())
    },

    // The daemon queue's operations, one group-committed transaction each (native-queue.ts).
    nativeQueue: sqliteNativeQueue({
      submit,
      load,
      read: (key) => {
        const row = statements.readWholeValue(key)
        return row === undefined ? absent(key) : decodeWholeValueRow(namespace, key, row)
      },
      store,
      clock: () => clock(),
      assertOpen: () => {
        if (closed) throw closedError()
      },
    }),

    watch(prefix, watchOptions) {
      return watcher.poller.watch(prefix, watchOptions, () => {
        if (closed) throw closedError()
      })
    },

    async close(): Promise<void> {
      if (closed) return
      // Mutations already submitted still commit (unless a batch is waiting
      // for a lock: those fail with CLOSED).
      writes.flushNow()
      closed = true
      watcher.close()
      connection.release()
    },
  }
  const watcher = createSqliteWatcher(db, (listOptions) => backend.list(listOptions))
  return setWatchInterrupt(backend, SQLITE_NO_CHANNEL)
}
