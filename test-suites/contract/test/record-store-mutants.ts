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

/** How a {@link simpleStores} store goes wrong (every option off: a correct store). */
interface SimpleFlaws {
  /** Versions from a counter per instance, over records every instance shares: versions repeat. */
  readonly perInstanceCounter?: boolean
  /** What `write` keeps of the caller's bytes (default: a copy). */
  readonly keep?: (data: Uint8Array) => Uint8Array
  /** What `read` gives of the stored bytes (default: a copy). */
  readonly giveRead?: (stored: Uint8Array) => Uint8Array
  /** What `scan` gives of the stored bytes (default: a copy). */
  readonly giveScan?: (stored: Uint8Array) => Uint8Array
  /** Insert the key into the sorted index on every write, not only on a create. */
  readonly indexEveryWrite?: boolean
}

/** A store over a map and a sorted key index shared by every instance of a namespace. */
function simpleStores(flaws: SimpleFlaws): (ctx: RecordStoreContext) => RecordStore {
  const copy = (data: Uint8Array) => new Uint8Array(data)
  const keep = flaws.keep ?? copy
  const giveRead = flaws.giveRead ?? copy
  const giveScan = flaws.giveScan ?? copy
  type Shared = {
    records: Map<string, { data: Uint8Array; version: string }>
    index: string[]
    counter: number
  }
  const shared = new Map<string, Shared>()
  return (ctx) => {
    const space = shared.get(ctx.namespace) ?? { records: new Map(), index: [], counter: 0 }
    shared.set(ctx.namespace, space)
    const { records, index } = space
    let own = 0
    return {
      name: 'simple-store',
      capabilities: {
        durable: false,
        multiProcess: false,
        multiHost: false,
        maxKeyBytes: 1024,
        maxValueBytes: TEST_MAX_VALUE_BYTES,
      },
      async read(key) {
        const found = records.get(key)
        return found === undefined ? null : { data: giveRead(found.data), version: found.version }
      },
      async write(key, data, condition) {
        const current = records.get(key)
        const holds =
          'absent' in condition ? current === undefined : current?.version === condition.version
        if (!holds) throw new AgentStateError('PRECONDITION_FAILED', 'record changed')
        const version = String(flaws.perInstanceCounter === true ? ++own : ++space.counter)
        if (current === undefined || flaws.indexEveryWrite === true) {
          const at = index.findIndex((k) => compareUtf8(k, key) > 0)
          index.splice(at < 0 ? index.length : at, 0, key)
        }
        records.set(key, { data: keep(data), version })
        return version
      },
      async scan({ prefix, after, limit }) {
        const keys = index.filter(
          (k) => k.startsWith(prefix) && (after === undefined || compareUtf8(k, after) > 0),
        )
        const page: ScannedRecord[] = keys
          .slice(0, limit)
          .map((key) => ({ key, data: giveScan((records.get(key) as { data: Uint8Array }).data) }))
        return { records: page, done: keys.length <= limit }
      },
      async destroy() {
        records.clear()
        index.length = 0
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
  'versions from a per-instance counter': () => simpleStores({ perInstanceCounter: true }),
  'an after equal to the prefix read as the start of the prefix': () =>
    correctStores((store) => ({
      ...store,
      // "Start at the prefix unless after is past it", with >= where > was meant.
      scan: ({ prefix, after, limit }) =>
        store.scan(
          after === undefined || compareUtf8(after, prefix) <= 0
            ? { prefix, limit }
            : { prefix, after, limit },
        ),
    })),
  'an overwrite indexes the key again': () => simpleStores({ indexEveryWrite: true }),
  "write keeps the caller's Buffer (slice is a view)": () =>
    simpleStores({ keep: (data) => data.slice() }),
  'read gives a view of the stored bytes': () =>
    simpleStores({
      keep: (data) => Buffer.from(data),
      giveRead: (stored) => (stored as Buffer).slice(),
    }),
  'scan gives the stored bytes themselves': () => simpleStores({ giveScan: (stored) => stored }),
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
