import {
  assertLeaseShape,
  checkAcquire,
  checkDelete,
  checkPut,
  normalizeListOptions,
} from './arguments.js'
import {
  type AcquireLeaseOptions,
  type Backend,
  type Capabilities,
  CONTRACT_VERSION,
  type DeleteOptions,
  type Lease,
  type ListEntry,
  type ListOptions,
  type ListPage,
  type PutOptions,
  type StoredValue,
  type ValueMeta,
} from './backend.js'
import { backendFailure } from './backend-failure.js'
import {
  assertWatchPrefix,
  type ChangeHint,
  createWatchSet,
  failedWatch,
  setWatchInterrupt,
  type WatchOptions,
  type WatchSet,
  watchInterruptOf,
} from './change-notification.js'
import { type Clock, systemClock } from './clock.js'
import { fenceUnsupported } from './cross-key-fence.js'
import { AgentStateError, isAgentStateError } from './errors.js'
import {
  ABSENT_STATE,
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  liveLease,
  metaOf,
} from './key-state.js'
import { assertValidKey, quoteForMessage } from './keys.js'
import { collectListPage } from './list-page.js'
import { type CachedKeyState, PutStateCache } from './put-state-cache.js'
import { decodeKeyState, encodeKeyState, type KeyState } from './record-codec.js'
import type { RecordCondition, RecordStore } from './record-store.js'

/**
 * Options of {@link createRecordBackend}. All optional: `createRecordBackend(store)`
 * is a complete backend; tests pass `{ clock: ctx.clock }`.
 */
export interface RecordBackendOptions {
  /**
   * Clock for `updatedAt` and lease expiry (the backend's lease clock is
   * `host`, judged by this clock). Default: `Date.now`. Pass the contract
   * suite's `ctx.clock` in tests: its expiry checks move it by hand.
   */
  readonly clock?: Clock
  /**
   * How many times one operation re-reads and retries after losing a race on
   * the record's conditional write (a `PRECONDITION_FAILED` from the store)
   * before giving up with `UNAVAILABLE`. Default: 10 000.
   */
  readonly maxAttempts?: number
  /**
   * On stores that declare `versionChangesWithBytes`, how many keys' last seen
   * states to remember so that a `put` or `delete` can skip its read and go
   * straight to the conditional write (one round trip instead of two on S3).
   * 0 turns it off. Default: 1024.
   */
  readonly putCacheSize?: number
}

const DEFAULT_MAX_ATTEMPTS = 10_000
const DEFAULT_PUT_CACHE_SIZE = 1024
const ABSENT: RecordCondition = { absent: true }
/**
 * What a create-if-absent of a key not in the cache guesses: no record at
 * all. Sound on every store, because "absent" is checked by the store itself;
 * a record that exists (a value, a tombstone, a lease, a corrupt file) fails
 * the write, and the fresh read decides.
 */
const ABSENT_GUESS: CachedKeyState = { state: ABSENT_STATE, condition: ABSENT }

/**
 * Builds the whole Backend contract on a {@link RecordStore}: writer
 * metadata, compare-and-set, leases and fenced writes (checked in the same
 * conditional write as the value), fencing tokens that survive delete, and
 * listings that hide deleted keys.
 *
 * Every mutating operation reads the key's record, applies the contract's
 * rules, and writes the result conditionally on the version it read; a lost
 * race re-reads and re-applies, so each operation takes effect atomically at
 * its conditional write. A `put` or `delete` may skip that first read and
 * start from a guess (the last state this instance saw, or "absent" for a
 * create-if-absent), which only saves a round trip: the conditional write
 * still decides, and anything the guess could get wrong is re-done on a
 * fresh read.
 */
export function createRecordBackend(
  store: RecordStore,
  options: RecordBackendOptions = {},
): Backend {
  const clock = options.clock ?? systemClock
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
  // A claim without the hook that keeps it is dropped: the Backend never claims what it lacks.
  // A record holds one key's state, so no record write can check another key's lease:
  // `crossKeyFence` is never claimed over a RecordStore.
  const {
    changeNotification,
    crossKeyFence: _neverOverRecords,
    ...storeCapabilities
  } = store.capabilities
  const storeWatch = store.watch?.bind(store)
  const capabilities: Capabilities = {
    ...storeCapabilities,
    leaseClock: 'host' as const,
    ...(changeNotification !== undefined && storeWatch !== undefined ? { changeNotification } : {}),
  }
  const watches = createWatchSet()
  const { maxKeyBytes } = capabilities
  const cacheSize = options.putCacheSize ?? DEFAULT_PUT_CACHE_SIZE
  // Sound only where any change to a record's bytes changes its version: see PutStateCache.
  const cache =
    store.versionChangesWithBytes === true && cacheSize > 0 ? new PutStateCache(cacheSize) : null
  const remove = store.remove?.bind(store)
  let closed = false

  function assertOpen(): void {
    if (closed) throw new AgentStateError('CLOSED', `Backend ${store.name} is closed`)
  }

  async function load(key: string): Promise<{ state: KeyState; condition: RecordCondition }> {
    const record = await store.read(key)
    if (record === null) {
      cache?.remember(key, ABSENT_STATE, ABSENT)
      return { state: ABSENT_STATE, condition: ABSENT }
    }
    const state = decodeKeyState(key, record.data)
    const condition = { version: record.version }
    cache?.remember(key, state, condition)
    return { state, condition }
  }

  /**
   * Runs `step` on the current state and writes what it returns, retrying on a
   * lost race. `step` returns `undefined` for "nothing to write".
   *
   * With `guess`, the first attempt starts from the cached state instead of a
   * read. A guess decides nothing: if a rule fails on it, it has nothing to
   * write, or its conditional write loses, the next attempt reads afresh, and
   * that attempt is not counted as a lost race.
   */
  async function update<T>(
    key: string,
    step: (state: KeyState) => { next: KeyState | undefined; result: T },
    guess?: CachedKeyState,
    removable?: (next: KeyState) => boolean,
  ): Promise<T> {
    let lostRaces = 0
    let pending = guess
    for (;;) {
      assertOpen()
      const guessed = pending !== undefined
      const { state, condition } = pending ?? (await load(key))
      pending = undefined
      let outcome: { next: KeyState | undefined; result: T }
      try {
        outcome = step(state)
      } catch (error) {
        if (guessed) continue
        throw error
      }
      const { next, result } = outcome
      if (next === undefined) {
        if (guessed) continue
        return result
      }
      try {
        if (remove !== undefined && 'version' in condition && removable?.(next) === true) {
          await remove(key, condition)
          cache?.remember(key, ABSENT_STATE, ABSENT)
          return result
        }
        const version = await store.write(key, encodeKeyState(next), condition)
        cache?.remember(key, next, { version })
        return result
      } catch (error) {
        cache?.forget(key)
        if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
        if (guessed) continue
        lostRaces++
        if (lostRaces >= maxAttempts) {
          throw backendFailure({
            operation: 'conditional write',
            mayHaveApplied: false,
            message: `Gave up on key ${quoteForMessage(key)} after ${lostRaces} lost races`,
            context: { key, attempts: lostRaces },
            cause: error,
          })
        }
      }
    }
  }

  const backend: Backend = {
    contractVersion: CONTRACT_VERSION,
    name: store.name,
    capabilities,

    async get(key: string): Promise<StoredValue | null> {
      assertOpen()
      assertValidKey(key, maxKeyBytes)
      const { state } = await load(key)
      const meta = metaOf(key, state)
      return meta === null ? null : { value: state.value, meta }
    },

    async head(key: string): Promise<ValueMeta | null> {
      assertOpen()
      assertValidKey(key, maxKeyBytes)
      return metaOf(key, (await load(key)).state)
    },

    async put(key: string, value: Uint8Array, putOptions?: PutOptions): Promise<ValueMeta> {
      assertOpen()
      const writer = checkPut(key, value, putOptions, capabilities)
      if (putOptions?.fence !== undefined) throw fenceUnsupported(store.name)
      // Copy once: the caller may reuse its buffer after we return (not `value.slice()`, which
      // is a view of the caller's memory for a Buffer).
      const bytes = new Uint8Array(value)
      return update(
        key,
        (state) => {
          const next = applyPut(key, state, bytes, writer, putOptions, clock())
          return { next, result: metaOf(key, next) as ValueMeta }
        },
        cache?.take(key) ?? (putOptions?.ifNoneMatch === '*' ? ABSENT_GUESS : undefined),
      )
    },

    async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      assertOpen()
      checkDelete(key, deleteOptions, maxKeyBytes)
      // A delete drops the value, so the value-less cached state serves it like a put.
      return update(
        key,
        (state) => {
          const next = applyDelete(key, state, deleteOptions, clock())
          return { next, result: next !== undefined }
        },
        cache?.take(key),
        // No lease was ever issued for the key (fencing counter 0): nothing
        // must outlive the value, so a store that can remove drops the record
        // instead of writing a tombstone. A key that ever had a lease keeps
        // its tombstone, and with it the counter its next token must exceed.
        (next) => next.fence === 0 && next.lease === null,
      )
    },

    async list(listOptions?: ListOptions): Promise<ListPage> {
      assertOpen()
      const normalized = normalizeListOptions(listOptions)
      return collectListPage(normalized, async (position, max) => {
        const scanOptions =
          position === undefined
            ? { prefix: normalized.prefix, limit: max }
            : {
                prefix: normalized.prefix,
                after: position.group ? `${position.after}\u{10FFFF}` : position.after,
                limit: max,
              }
        const { records, done } = await store.scan(scanOptions)
        const entries: ListEntry[] = []
        for (const record of records) {
          const meta = metaOf(record.key, decodeKeyState(record.key, record.data))
          if (meta !== null) {
            entries.push({
              key: meta.key,
              version: meta.version,
              size: meta.size,
              updatedAt: meta.updatedAt,
            })
          }
        }
        const last = records[records.length - 1]
        return last === undefined ? { entries, done } : { entries, done, examinedUpTo: last.key }
      })
    },

    async acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
      assertOpen()
      checkAcquire(key, leaseOptions, maxKeyBytes)
      return update(key, (state) => {
        const { state: next, lease } = applyAcquire(key, state, leaseOptions, clock())
        return { next, result: lease }
      })
    },

    async renewLease(lease: Lease): Promise<Lease> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, maxKeyBytes)
      return update(lease.key, (state) => {
        const { state: next, lease: renewed } = applyRenew(state, lease, clock())
        return { next, result: renewed }
      })
    },

    async releaseLease(lease: Lease): Promise<boolean> {
      assertOpen()
      assertLeaseShape(lease)
      assertValidKey(lease.key, maxKeyBytes)
      return update(lease.key, (state) => {
        const next = applyRelease(state, lease)
        return { next, result: next !== undefined }
      })
    },

    async getLease(key: string): Promise<Lease | null> {
      assertOpen()
      assertValidKey(key, maxKeyBytes)
      return liveLease(key, (await load(key)).state, clock())
    },

    async close(): Promise<void> {
      if (closed) return
      closed = true
      watches.endAll()
      cache?.clear()
      await store.close()
    },
  }
  if (capabilities.changeNotification !== undefined && storeWatch !== undefined) {
    backend.watch = (prefix, watchOptions) =>
      watchRecords(storeWatch, watches, prefix, watchOptions, maxKeyBytes, () => {
        assertOpen()
      })
    // The store's declaration of how its watch channel can be cut (or why it cannot) is the
    // backend's: the contract suite and `verify` read it from the instance.
    const seam = watchInterruptOf(store)
    if (seam !== undefined) setWatchInterrupt(backend, seam)
  }
  if (store.destroy !== undefined) {
    const destroy = store.destroy.bind(store)
    backend.destroy = async () => {
      assertOpen()
      await destroy()
    }
  }
  return backend
}

/**
 * A Backend watch over the store's: the prefix checked, the stream
 * registered with the instance (so `close()` ends it), the store's
 * iteration ended through its signal when the stream ends.
 */
function watchRecords(
  storeWatch: NonNullable<RecordStore['watch']>,
  watches: WatchSet,
  prefix: string,
  options: WatchOptions | undefined,
  maxKeyBytes: number,
  assertOpen: () => void,
): AsyncIterable<ChangeHint> {
  try {
    assertOpen()
    assertWatchPrefix(prefix, maxKeyBytes)
  } catch (error) {
    return failedWatch(error)
  }
  const controller = new AbortController()
  const stream = watches.open(prefix, {
    signal: options?.signal,
    onEnd: () => controller.abort(),
  })
  if (stream.ended) return stream
  void (async () => {
    try {
      for await (const hint of storeWatch(prefix, { signal: controller.signal })) {
        if (hint.kind === 'key') stream.key(hint.key)
        else if (hint.kind === 'prefix') stream.prefixChanged(hint.prefix)
        else stream.resync()
      }
      stream.end()
    } catch (error) {
      stream.fail(error)
    }
  })()
  return stream
}
