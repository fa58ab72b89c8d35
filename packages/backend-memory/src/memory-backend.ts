import {
  ABSENT_STATE,
  type AcquireLeaseOptions,
  applyAcquire,
  applyDelete,
  applyPut,
  applyRelease,
  applyRenew,
  assertLeaseShape,
  assertValidKey,
  assertValue,
  type Backend,
  type Capabilities,
  type Clock,
  CONTRACT_VERSION,
  checkAcquire,
  checkDelete,
  checkFence,
  checkPut,
  checkPutOptions,
  collectListPage,
  createWatchSet,
  type DeleteOptions,
  type KeyState,
  type Lease,
  type ListEntry,
  type ListOptions,
  type ListPage,
  liveLease,
  MAX_KEY_BYTES,
  metaOf,
  normalizeListOptions,
  type PutOptions,
  parseBackendOptions,
  type StoredValue,
  setWatchInterrupt,
  systemClock,
  type ValueMeta,
} from '@agent-state/core'
import {
  announceAll,
  announceKey,
  MEMORY_CHANGE_NOTIFICATION,
  MEMORY_IN_PROCESS,
  watchMemory,
} from './change-notification.js'
import { closedError } from './errors.js'
import { createMemoryStore, indexAfter, type MemoryStore, setState } from './memory-store.js'
import { type MemoryBackendOptions, memoryOptionsSchema } from './options.js'
import { copyIn, copyOut } from './value-pool.js'

/** One settled `null` for every miss: a promise is immutable, so sharing it is safe. */
const RESOLVED_NULL: Promise<null> = Promise.resolve(null)

/** Shared by instances created without a `store`: `memory:` URLs in one process see one store. */
let processStore: MemoryStore | undefined

/**
 * The reference backend: the contract's rules applied synchronously to a Map,
 * with no `await` between a check and its write, so every operation is atomic
 * by construction. Not durable, one process only.
 *
 * @throws `INVALID_ARGUMENT` for invalid or unknown options (`context: { backend, field, issues }`).
 */
export function createMemoryBackend(options: MemoryBackendOptions = {}): Backend {
  const resolved = parseBackendOptions(memoryOptionsSchema, options, 'memory')
  const namespaceName = resolved.namespace
  const clock: Clock = resolved.clock ?? systemClock
  processStore ??= createMemoryStore()
  const store = resolved.store ?? processStore
  const capabilities: Capabilities = {
    durable: false,
    multiProcess: false,
    multiHost: false,
    leaseClock: 'host',
    crossKeyFence: true,
    maxKeyBytes: MAX_KEY_BYTES,
    maxValueBytes: resolved.maxValueBytes,
    changeNotification: MEMORY_CHANGE_NOTIFICATION,
  }
  let closed = false
  const watches = createWatchSet()

  function open(): ReturnType<MemoryStore['namespace']> {
    if (closed) throw closedError()
    return store.namespace(namespaceName)
  }
  function stateOf(key: string): KeyState {
    return open().states.get(key) ?? ABSENT_STATE
  }

  return setWatchInterrupt<Backend>(
    {
      contractVersion: CONTRACT_VERSION,
      name: 'memory',
      capabilities,

      get(key: string): Promise<StoredValue | null> {
        // The hot path of the reference backend, kept to what the contract
        // needs: one Map lookup, the meta, and the copy out (a caller may
        // mutate what it gets). A key found in the Map was validated when it
        // was stored, so only a miss pays for validation. Not `async`: a
        // settled promise is all a caller awaits.
        try {
          const state = closed ? undefined : store.namespace(namespaceName).states.get(key)
          if (state === undefined) {
            assertValidKey(key)
            open()
            return RESOLVED_NULL
          }
          if (state.version === null) return RESOLVED_NULL
          return Promise.resolve({
            value: copyOut(state.value),
            meta: metaOf(key, state) as ValueMeta,
          })
        } catch (error) {
          return Promise.reject(error)
        }
      },

      head(key: string): Promise<ValueMeta | null> {
        // As `get`: only a key missing from the Map is validated.
        try {
          const state = closed ? undefined : store.namespace(namespaceName).states.get(key)
          if (state === undefined) {
            assertValidKey(key)
            open()
            return RESOLVED_NULL
          }
          return Promise.resolve(metaOf(key, state))
        } catch (error) {
          return Promise.reject(error)
        }
      },

      put(key: string, value: Uint8Array, putOptions?: PutOptions): Promise<ValueMeta> {
        // One namespace lookup and one Map lookup; a key found in the Map was
        // validated when it was stored, so a put of it checks only the value
        // and the options (a compare-and-set skips the key check too).
        try {
          const ns = closed ? undefined : store.namespace(namespaceName)
          const current = ns?.states.get(key)
          let writer: ReturnType<typeof checkPut>
          if (current === undefined) {
            writer = checkPut(key, value, putOptions, capabilities)
          } else {
            assertValue(value, capabilities.maxValueBytes)
            writer = checkPutOptions(key, putOptions)
          }
          const target = ns ?? open()
          const now = clock()
          const fence = putOptions?.fence
          if (fence !== undefined) {
            checkFence(key, fence, target.states.get(fence.key) ?? ABSENT_STATE, now)
          }
          // The stored copy (the caller may reuse its buffer), from a pool: see value-pool.ts.
          const next = applyPut(
            key,
            current ?? ABSENT_STATE,
            copyIn(value),
            writer,
            putOptions,
            now,
          )
          // A key already in the Map is already in the sorted index: one Map write, no `has`.
          if (current !== undefined) target.states.set(key, next)
          else setState(target, key, next)
          announceKey(store, namespaceName, key)
          return Promise.resolve(metaOf(key, next) as ValueMeta)
        } catch (error) {
          return Promise.reject(error)
        }
      },

      async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
        checkDelete(key, deleteOptions, capabilities.maxKeyBytes)
        const next = applyDelete(key, stateOf(key), deleteOptions, clock())
        if (next === undefined) return false
        setState(open(), key, next)
        announceKey(store, namespaceName, key)
        return true
      },

      async list(listOptions?: ListOptions): Promise<ListPage> {
        const normalized = normalizeListOptions(listOptions)
        const ns = open()
        return collectListPage(normalized, async (position, max) => {
          const { sortedKeys, states } = ns
          let index = indexAfter(sortedKeys, normalized.prefix, true)
          if (position !== undefined) {
            const after = position.group ? `${position.after}\u{10FFFF}` : position.after
            index = Math.max(index, indexAfter(sortedKeys, after))
          }
          const entries: ListEntry[] = []
          let examinedUpTo: string | undefined
          let done = true
          for (; index < sortedKeys.length; index++) {
            const key = sortedKeys[index] as string
            // Keys sharing the prefix are contiguous in byte order.
            if (!key.startsWith(normalized.prefix)) break
            if (entries.length === max) {
              done = false
              break
            }
            examinedUpTo = key
            const meta = metaOf(key, states.get(key) ?? ABSENT_STATE)
            if (meta !== null)
              entries.push({
                key,
                version: meta.version,
                size: meta.size,
                updatedAt: meta.updatedAt,
              })
          }
          return examinedUpTo === undefined ? { entries, done } : { entries, done, examinedUpTo }
        })
      },

      async acquireLease(key: string, leaseOptions: AcquireLeaseOptions): Promise<Lease> {
        checkAcquire(key, leaseOptions, capabilities.maxKeyBytes)
        const { state, lease } = applyAcquire(key, stateOf(key), leaseOptions, clock())
        setState(open(), key, state)
        return lease
      },

      async renewLease(lease: Lease): Promise<Lease> {
        assertLeaseShape(lease)
        assertValidKey(lease.key)
        const { state, lease: renewed } = applyRenew(stateOf(lease.key), lease, clock())
        setState(open(), lease.key, state)
        return renewed
      },

      async releaseLease(lease: Lease): Promise<boolean> {
        assertLeaseShape(lease)
        assertValidKey(lease.key)
        const next = applyRelease(stateOf(lease.key), lease)
        if (next === undefined) return false
        setState(open(), lease.key, next)
        return true
      },

      async getLease(key: string): Promise<Lease | null> {
        assertValidKey(key)
        return liveLease(key, stateOf(key), clock())
      },

      async destroy(): Promise<void> {
        open()
        store.drop(namespaceName)
        announceAll(store, namespaceName)
      },

      watch(prefix, watchOptions) {
        return watchMemory(store, namespaceName, watches, prefix, watchOptions, open)
      },

      async close(): Promise<void> {
        closed = true
        watches.endAll()
      },
    },
    MEMORY_IN_PROCESS,
  )
}
