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
import { type Clock, systemClock } from './clock.js'
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
import { assertValidKey } from './keys.js'
import { collectListPage } from './list-page.js'
import { decodeKeyState, encodeKeyState, type KeyState } from './record-codec.js'
import type { RecordCondition, RecordStore } from './record-store.js'

/** Options of {@link createRecordBackend}. */
export interface RecordBackendOptions {
  /** Clock for `updatedAt` and lease expiry (the `host` lease clock). Default: `Date.now`. */
  readonly clock?: Clock
  /**
   * How many times one operation re-reads and retries after losing a race on
   * the record's conditional write before giving up with `UNAVAILABLE`.
   */
  readonly maxAttempts?: number
}

const DEFAULT_MAX_ATTEMPTS = 10_000

/**
 * Builds the whole Backend contract on a {@link RecordStore}: writer
 * metadata, compare-and-set, leases and fenced writes (checked in the same
 * conditional write as the value), fencing tokens that survive delete, and
 * listings that hide deleted keys.
 *
 * Every mutating operation reads the key's record, applies the contract's
 * rules, and writes the result conditionally on the version it read; a lost
 * race re-reads and re-applies, so each operation takes effect atomically at
 * its conditional write.
 */
export function createRecordBackend(
  store: RecordStore,
  options: RecordBackendOptions = {},
): Backend {
  const clock = options.clock ?? systemClock
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
  const capabilities = { ...store.capabilities, leaseClock: 'host' as const }
  const { maxKeyBytes } = capabilities
  let closed = false

  function assertOpen(): void {
    if (closed) throw new AgentStateError('CLOSED', `Backend ${store.name} is closed`)
  }

  async function load(key: string): Promise<{ state: KeyState; condition: RecordCondition }> {
    const record = await store.read(key)
    if (record === null) return { state: ABSENT_STATE, condition: { absent: true } }
    return { state: decodeKeyState(key, record.data), condition: { version: record.version } }
  }

  /**
   * Runs `step` on the current state and writes what it returns, retrying on a
   * lost race. `step` returns `undefined` for "nothing to write".
   */
  async function update<T>(
    key: string,
    step: (state: KeyState) => { next: KeyState | undefined; result: T },
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      assertOpen()
      const { state, condition } = await load(key)
      const { next, result } = step(state)
      if (next === undefined) return result
      try {
        await store.write(key, encodeKeyState(next), condition)
        return result
      } catch (error) {
        if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
        if (attempt >= maxAttempts) {
          throw new AgentStateError(
            'UNAVAILABLE',
            `Gave up on key ${JSON.stringify(key)} after ${attempt} lost races`,
            {
              context: { key, attempts: attempt },
            },
          )
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
      // Copy once: the caller may reuse its buffer after we return.
      const bytes = value.slice()
      return update(key, (state) => {
        const next = applyPut(key, state, bytes, writer, putOptions, clock())
        return { next, result: metaOf(key, next) as ValueMeta }
      })
    },

    async delete(key: string, deleteOptions?: DeleteOptions): Promise<boolean> {
      assertOpen()
      checkDelete(key, deleteOptions, maxKeyBytes)
      return update(key, (state) => {
        const next = applyDelete(key, state, deleteOptions, clock())
        return { next, result: next !== undefined }
      })
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
      await store.close()
    },
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
