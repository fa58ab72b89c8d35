import {
  AgentStateError,
  compareUtf8,
  isAgentStateError,
  type RecordStore,
  type ScannedRecord,
} from '@agent-state/core'
import { createMemoryRecordMap, createMemoryRecordStore } from '@agent-state/memory'
import type { RecordStoreContext } from '../src/index.js'

/** A factory of stores for the record-store tier: one correct, the rest subtly broken. */
export type StoreFactory = () => (ctx: RecordStoreContext) => RecordStore

/** The limit the size-limit checks run at (small, so each mutant test stays fast). */
export const TEST_MAX_VALUE_BYTES = 1024 * 1024

type Map_ = ReturnType<typeof createMemoryRecordMap>

/** A correct store: the memory record store, one map per namespace, a 1 MiB value limit. */
export function correctStores(wrap: (store: RecordStore) => RecordStore = (s) => s) {
  const maps = new Map<string, Map_>()
  return (ctx: RecordStoreContext): RecordStore => {
    let records = maps.get(ctx.namespace)
    if (records === undefined) {
      records = createMemoryRecordMap()
      maps.set(ctx.namespace, records)
    }
    const inner = createMemoryRecordStore({ records })
    return wrap({
      ...inner,
      capabilities: { ...inner.capabilities, maxValueBytes: TEST_MAX_VALUE_BYTES },
    })
  }
}

/** A per-instance version counter over a map shared by every instance: versions repeat. */
function perInstanceCounter(): (ctx: RecordStoreContext) => RecordStore {
  const shared = new Map<string, Map<string, { data: Uint8Array; version: string }>>()
  return (ctx) => {
    const records = shared.get(ctx.namespace) ?? new Map()
    shared.set(ctx.namespace, records)
    let counter = 0
    return {
      name: 'per-instance-counter',
      capabilities: {
        durable: false,
        multiProcess: false,
        multiHost: false,
        maxKeyBytes: 1024,
        maxValueBytes: TEST_MAX_VALUE_BYTES,
      },
      async read(key) {
        return records.get(key) ?? null
      },
      async write(key, data, condition) {
        const current = records.get(key)
        const holds =
          'absent' in condition ? current === undefined : current?.version === condition.version
        if (!holds) throw new AgentStateError('PRECONDITION_FAILED', 'record changed')
        const version = String(++counter)
        records.set(key, { data: data.slice(), version })
        return version
      },
      async scan({ prefix, after, limit }) {
        const keys = [...records.keys()]
          .filter((k) => k.startsWith(prefix) && (after === undefined || compareUtf8(k, after) > 0))
          .sort(compareUtf8)
        const page: ScannedRecord[] = keys
          .slice(0, limit)
          .map((key) => ({ key, data: (records.get(key) as { data: Uint8Array }).data }))
        return { records: page, done: keys.length <= limit }
      },
      async destroy() {
        records.clear()
      },
      async close() {},
    }
  }
}

/** The mutants: each a plausible mistake of a store author. */
export const RECORD_STORE_MUTANTS: Record<string, StoreFactory> = {
  'inclusive after in scan': () =>
    correctStores((store) => ({
      ...store,
      async scan(options) {
        const page = await store.scan(options)
        if (options.after === undefined || !options.after.startsWith(options.prefix)) return page
        const itself = await store.read(options.after)
        if (itself === null) return page
        const records = [{ key: options.after, data: itself.data }, ...page.records]
        return {
          records: records.slice(0, options.limit),
          done: page.done && records.length <= options.limit,
        }
      },
    })),
  'no upper bound on a prefix scan': () =>
    correctStores((store) => ({
      ...store,
      async scan({ prefix, after, limit }) {
        // Starts at the prefix, then runs on past its range.
        const start = after !== undefined && compareUtf8(after, prefix) >= 0 ? after : undefined
        const page = await store.scan(
          start === undefined
            ? { prefix: '', limit: limit + 1000 }
            : { prefix: '', after: start, limit },
        )
        const records = page.records.filter((r) => compareUtf8(r.key, prefix) >= 0).slice(0, limit)
        return { records, done: page.done && records.length < limit }
      },
    })),
  'remove ignores the expected version': () =>
    correctStores((store) => ({
      ...store,
      async remove(key) {
        const current = await store.read(key)
        if (current !== null) await store.remove?.(key, { version: current.version })
      },
    })),
  'namespaces not kept apart': () => {
    const stores = correctStores()
    return () => stores({ namespace: 'everyone' })
  },
  'versions from a per-instance counter': perInstanceCounter,
  'a refused write throws a raw error': () =>
    correctStores((store) => ({
      ...store,
      async write(key, data, condition) {
        try {
          return await store.write(key, data, condition)
        } catch (error) {
          if (isAgentStateError(error, 'PRECONDITION_FAILED')) throw new Error('conflict')
          throw error
        }
      },
    })),
  'absent condition overwrites an existing record': () =>
    correctStores((store) => ({
      ...store,
      async write(key, data, condition) {
        const current = 'absent' in condition ? await store.read(key) : null
        return store.write(key, data, current === null ? condition : { version: current.version })
      },
    })),
  'scan in UTF-16 order': () =>
    correctStores((store) => ({
      ...store,
      async scan(options) {
        const page = await store.scan(options)
        const records = [...page.records].sort((a, b) =>
          a.key < b.key ? -1 : a.key > b.key ? 1 : 0,
        )
        return { ...page, records }
      },
    })),
  'done on every full page': () =>
    correctStores((store) => ({
      ...store,
      async scan(options) {
        const page = await store.scan(options)
        return { ...page, done: true }
      },
    })),
  'maxValueBytes counted against the whole record': () =>
    correctStores((store) => ({
      ...store,
      async write(key, data, condition) {
        if (data.byteLength > store.capabilities.maxValueBytes) {
          throw new AgentStateError('VALUE_TOO_LARGE', 'record too large')
        }
        return store.write(key, data, condition)
      },
    })),
}
