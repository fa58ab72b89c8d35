import {
  AgentStateError,
  type Backend,
  createRecordBackend,
  decodeKeyState,
  type KeyState,
  type ListEntry,
  type ListPage,
  type RecordStore,
} from '@agent-state/core'
import {
  createMemoryBackend,
  createMemoryRecordMap,
  createMemoryRecordStore,
  type MemoryRecordMap,
  type MemoryStore,
} from '@agent-state/memory'
import type { ContractContext } from '../src/index.js'
import type { MutantFactory } from './memory-mutants.js'

/**
 * Deliberately broken memory backends for the rule combinations and the
 * specification decisions (checks/rule-combinations.ts, checks/decisions.ts,
 * the value-size check): each passed the suite before the check that now
 * catches it.
 */

function base(
  store: MemoryStore,
  ctx: ContractContext,
): { inner: Backend; states: Map<string, KeyState> } {
  const inner = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
  return { inner, states: store.namespace(ctx.namespace).states }
}

/** Per-store state a mutant shares between its instances (as a real backend's storage would). */
function perStore<T>(make: () => T): (store: MemoryStore) => T {
  const all = new WeakMap<MemoryStore, T>()
  return (store) => {
    let found = all.get(store)
    if (found === undefined) {
      found = make()
      all.set(store, found)
    }
    return found
  }
}

const staleSizes = perStore(() => new Map<string, number>())
// Per namespace: the suite's capability probe closes an instance of its own namespace first.
const closedNamespaces = perStore(() => new Set<string>())

const MIB = 1024 * 1024

/** Record maps per namespace, for the mutants built on core's record backend. */
const recordMaps = perStore(() => new Map<string, MemoryRecordMap>())

/** The mutants, by name. */
export const RULE_MUTANTS: Record<string, MutantFactory> = {
  'size of the first value kept after an unconditional overwrite': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    const stale = staleSizes(store)
    const patch = <T extends { key: string; size?: number }>(meta: T): T => {
      const size = stale.get(meta.key)
      return size === undefined ? meta : { ...meta, size }
    }
    return {
      ...inner,
      async put(key, value, options) {
        const before = await inner.head(key)
        const meta = await inner.put(key, value, options)
        const conditional =
          options?.ifMatch !== undefined ||
          options?.ifNoneMatch !== undefined ||
          options?.lease !== undefined
        if (conditional || before === null) stale.delete(key)
        else if (!stale.has(key)) stale.set(key, before.size)
        return meta
      },
      async head(key) {
        const meta = await inner.head(key)
        return meta === null ? null : patch(meta)
      },
      async get(key) {
        const got = await inner.get(key)
        return got === null ? null : { ...got, meta: patch(got.meta) }
      },
      async list(options) {
        const page = await inner.list(options)
        return { ...page, entries: page.entries.map((e: ListEntry) => patch(e)) }
      },
    }
  },

  'a fenced write or delete skips its precondition': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      put(key, value, options) {
        if (options?.lease === undefined) return inner.put(key, value, options)
        const { ifMatch: _m, ifNoneMatch: _n, ...rest } = options
        return inner.put(key, value, rest)
      },
      delete(key, options) {
        if (options?.lease === undefined) return inner.delete(key, options)
        return inner.delete(key, { lease: options.lease })
      },
    }
  },

  'continuation pages drop the prefix': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      list(options) {
        if (options?.cursor === undefined) return inner.list(options)
        const { prefix: _p, ...rest } = options
        return inner.list(rest)
      },
    }
  },

  "a holder's delete of the value drops the lease": (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async delete(key, options) {
        const existed = await inner.delete(key, options)
        const after = states.get(key)
        // The fencing counter stays, so tokens still grow: only the live lease is lost.
        if (options?.lease !== undefined && after !== undefined) {
          states.set(key, { ...after, lease: null })
        }
        return existed
      },
    }
  },

  'lease lookup matches a leased prefix of the key': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async getLease(key) {
        const own = await inner.getLease(key)
        if (own !== null) return own
        for (const other of states.keys()) {
          if (other !== key && key.startsWith(other)) {
            const lease = await inner.getLease(other)
            if (lease !== null) return lease
          }
        }
        return null
      },
    }
  },

  'TTLs rounded up to whole seconds': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async acquireLease(key, options) {
        const ttlMs = Math.ceil(options.ttlMs / 1000) * 1000
        return { ...(await inner.acquireLease(key, { ...options, ttlMs })), ttlMs: options.ttlMs }
      },
    }
  },

  'renew extends from the old expiresAt': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async renewLease(lease) {
        const before = states.get(lease.key)?.lease
        const renewed = await inner.renewLease(lease)
        const after = states.get(lease.key) as KeyState
        if (before == null || after.lease === null) return renewed
        const expiresAt = before.expiresAt + before.ttlMs
        states.set(lease.key, { ...after, lease: { ...after.lease, expiresAt } })
        return { ...renewed, expiresAt }
      },
    }
  },

  'updatedAt from the system clock': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        const meta = await inner.put(key, value, options)
        const updatedAt = Date.now()
        states.set(key, { ...(states.get(key) as KeyState), updatedAt })
        return { ...meta, updatedAt }
      },
    }
  },

  'delimiter groups do not count toward limit': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async list(options) {
        if (options?.delimiter === undefined) return inner.list(options)
        const limit = options.limit ?? 1000
        const entries: ListEntry[] = []
        const prefixes: string[] = []
        let cursor = options.cursor
        for (;;) {
          const page: ListPage = await inner.list({
            ...options,
            limit: 1,
            ...(cursor === undefined ? {} : { cursor }),
          })
          entries.push(...page.entries)
          prefixes.push(...(page.prefixes ?? []))
          cursor = page.cursor
          if (cursor === undefined) return { entries, prefixes }
          if (entries.length >= limit) return { entries, prefixes, cursor }
        }
      },
    }
  },

  'close closes the storage every instance shares': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    const closed = closedNamespaces(store)
    const open =
      <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        if (closed.has(ctx.namespace)) {
          throw new AgentStateError('CLOSED', 'mutant: the shared store is closed')
        }
        return call(...args)
      }
    return {
      ...inner,
      get: open(inner.get),
      head: open(inner.head),
      put: open(inner.put),
      delete: open(inner.delete),
      list: open(inner.list),
      acquireLease: open(inner.acquireLease),
      renewLease: open(inner.renewLease),
      releaseLease: open(inner.releaseLease),
      getLease: open(inner.getLease),
      async close() {
        closed.add(ctx.namespace)
        await inner.close()
      },
    }
  },

  'a cursor that decodes to any JSON restarts the listing': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      list(options) {
        if (options?.cursor === undefined) return inner.list(options)
        let parsed: unknown
        try {
          parsed = JSON.parse(Buffer.from(options.cursor, 'base64url').toString('utf8'))
        } catch {
          return inner.list(options)
        }
        const shaped = typeof parsed === 'object' && parsed !== null && 'a' in parsed
        if (shaped) return inner.list(options)
        const { cursor: _c, ...rest } = options
        return inner.list(rest)
      },
    }
  },

  'renew of a released lease crashes': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async renewLease(lease) {
        if ((await inner.getLease(lease.key)) === null) {
          throw new TypeError("Cannot read properties of null (reading 'token')")
        }
        return inner.renewLease(lease)
      },
    }
  },

  'destroy leaves the leases behind': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async destroy() {
        const leased = [...states].filter(([, state]) => state.lease !== null)
        await inner.destroy?.()
        // destroy drops the namespace's map: put the leases into the fresh one.
        const fresh = store.namespace(ctx.namespace).states
        for (const [key, state] of leased) {
          fresh.set(key, { ...state, version: null, value: new Uint8Array(0) })
        }
      },
    }
  },

  'claims 64 MiB but refuses values above 16 MiB': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      put(key, value, options) {
        if (value.byteLength > 16 * MIB) {
          return Promise.reject(new AgentStateError('VALUE_TOO_LARGE', 'mutant: above 16 MiB'))
        }
        return inner.put(key, value, options)
      },
    }
  },

  // core's record backend building a watch over a store that has none (the claim is dropped, the
  // method kept): here the memory backend without its claim, its watch left in place.
  'a watch without the changeNotification claim': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    const { changeNotification: _claim, ...capabilities } = inner.capabilities
    return { ...inner, capabilities }
  },

  // The memory backend's own bug until the Buffer check: `value.slice()` copies a plain
  // Uint8Array but is a view of a Buffer's memory.
  "a Buffer is stored as a view of the caller's memory": (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        const meta = await inner.put(key, value, options)
        const after = states.get(key) as KeyState
        states.set(key, { ...after, value: value.slice() })
        return meta
      },
    }
  },

  // core's list-page restarting a scan after the last examined (not listed) key as if it were a
  // delimiter group: a record backend whose scan batch ends on deleted keys skips the live keys
  // that extend the last one. Here the store's scan makes that restart skip the same way.
  'a scan restart after deleted keys skips the keys that extend them': (store) => (ctx) => {
    const maps = recordMaps(store)
    let records = maps.get(ctx.namespace)
    if (records === undefined) {
      records = createMemoryRecordMap()
      maps.set(ctx.namespace, records)
    }
    const inner = createMemoryRecordStore({ records })
    let restartAfterDeleted: string | undefined
    const skipping: RecordStore = {
      ...inner,
      async scan(options) {
        const after =
          options.after !== undefined && options.after === restartAfterDeleted
            ? `${options.after}\u{10FFFF}`
            : options.after
        const page = await inner.scan(after === undefined ? options : { ...options, after })
        const last = page.records[page.records.length - 1]
        restartAfterDeleted =
          !page.done && last !== undefined && decodeKeyState(last.key, last.data).version === null
            ? last.key
            : undefined
        return page
      },
    }
    return createRecordBackend(skipping, { clock: ctx.clock })
  },
}
