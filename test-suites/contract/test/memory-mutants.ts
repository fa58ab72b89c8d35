import {
  AgentStateError,
  type Backend,
  decodeCursor,
  encodeCursor,
  type KeyState,
  type ListEntry,
  type ListOptions,
  type ListPage,
} from '@agent-state/core'
import { createMemoryBackend, type MemoryStore } from '@agent-state/memory'
import type { ContractContext } from '../src/index.js'

/**
 * Deliberately broken backends: the reference memory backend with one
 * contract rule broken each, by wrapping its methods or editing its store's
 * state directly. The mutant tests prove the suite catches every one.
 */
export type MutantFactory = (store: MemoryStore) => (ctx: ContractContext) => Backend

function base(
  store: MemoryStore,
  ctx: ContractContext,
): { inner: Backend; states: Map<string, KeyState> } {
  const inner = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
  return { inner, states: store.namespace(ctx.namespace).states }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** Every entry of the namespace, in the inner backend's (correct) order. */
async function allEntries(inner: Backend): Promise<ListEntry[]> {
  const out: ListEntry[] = []
  let cursor: string | undefined
  for (;;) {
    const page = await inner.list(
      cursor === undefined ? { limit: 10_000 } : { limit: 10_000, cursor },
    )
    out.push(...page.entries)
    if (page.cursor === undefined) return out
    cursor = page.cursor
  }
}

/** A listing over `order`-sorted keys with a simple cursor; `inclusive` repeats the cursor's key. */
async function naiveList(
  inner: Backend,
  options: ListOptions | undefined,
  order: (a: string, b: string) => number,
  inclusive: boolean,
): Promise<ListPage> {
  const prefix = options?.prefix ?? ''
  const limit = options?.limit ?? 1000
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > 10_000) {
    throw new AgentStateError('INVALID_ARGUMENT', 'bad limit')
  }
  const after = options?.cursor === undefined ? undefined : decodeCursor(options.cursor).after
  const entries = (await allEntries(inner))
    .filter((e) => e.key.startsWith(prefix))
    .sort((a, b) => order(a.key, b.key))
    .filter(
      (e) =>
        after === undefined || (inclusive ? order(e.key, after) >= 0 : order(e.key, after) > 0),
    )
  const page = entries.slice(0, limit)
  const last = page[page.length - 1]
  const more = entries.length > limit && last !== undefined
  return more
    ? { entries: page, cursor: encodeCursor({ after: last.key, group: false }) }
    : { entries: page }
}

const utf16 = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)
const bytewise = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b))

/** The required mutants, by name. */
export const MUTANTS: Record<string, MutantFactory> = {
  'racy compare-and-set (awaits between check and write)': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        if (options?.ifMatch === undefined && options?.ifNoneMatch === undefined)
          return inner.put(key, value, options)
        const current = await inner.head(key)
        const holds =
          options.ifMatch !== undefined ? current?.version === options.ifMatch : current === null
        if (!holds)
          throw new AgentStateError('PRECONDITION_FAILED', 'mutant', { context: { key, current } })
        await tick()
        const { ifMatch: _m, ifNoneMatch: _n, ...rest } = options
        return inner.put(key, value, rest)
      },
    }
  },

  // Every acquirer that finds the key free is granted it, the later grant replacing the earlier:
  // the shape of a backend that reads the lease and writes it in two steps.
  'racy lease acquire (awaits between the free check and the grant)': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async acquireLease(key, options) {
        const held = states.get(key)?.lease
        if (held != null && held.expiresAt > ctx.clock()) return inner.acquireLease(key, options)
        await tick()
        const state = states.get(key)
        if (state?.lease != null) states.set(key, { ...state, lease: null })
        return inner.acquireLease(key, options)
      },
    }
  },

  'list sorted in UTF-16 order': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return { ...inner, list: (options) => naiveList(inner, options, utf16, false) }
  },

  'inclusive cursor': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return { ...inner, list: (options) => naiveList(inner, options, bytewise, true) }
  },

  'version unchanged on identical rewrite': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        const before = states.get(key)
        const meta = await inner.put(key, value, options)
        const after = states.get(key) as KeyState
        if (before?.version != null && Buffer.from(before.value).equals(Buffer.from(value))) {
          states.set(key, { ...after, version: before.version })
          return { ...meta, version: before.version }
        }
        return meta
      },
    }
  },

  'version reused after delete and re-create': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        const meta = await inner.put(key, value, options)
        const after = states.get(key) as KeyState
        const version = `v${after.revision}`
        states.set(key, { ...after, version })
        return { ...meta, version }
      },
      async delete(key, options) {
        const existed = await inner.delete(key, options)
        const after = states.get(key)
        if (after !== undefined) states.set(key, { ...after, revision: 0 })
        return existed
      },
    }
  },

  'lease that never expires': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async acquireLease(key, options) {
        const lease = await inner.acquireLease(key, { ...options, ttlMs: 24 * 60 * 60 * 1000 })
        return { ...lease, ttlMs: options.ttlMs, expiresAt: ctx.clock() + options.ttlMs }
      },
      async renewLease(lease) {
        const renewed = await inner.renewLease(lease)
        return { ...renewed, ttlMs: lease.ttlMs, expiresAt: ctx.clock() + lease.ttlMs }
      },
    }
  },

  'renew after expiry succeeds': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async renewLease(lease) {
        const state = states.get(lease.key)
        if (state?.lease != null && state.lease.token === lease.token) {
          const expiresAt = ctx.clock() + lease.ttlMs
          states.set(lease.key, { ...state, lease: { ...state.lease, expiresAt } })
          return { ...lease, expiresAt }
        }
        return inner.renewLease(lease)
      },
    }
  },

  'release drops a newer holder lease': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async releaseLease(lease) {
        const state = states.get(lease.key)
        if (state?.lease == null) return false
        states.set(lease.key, { ...state, lease: null })
        return true
      },
    }
  },

  'fencing token reset after release': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async releaseLease(lease) {
        const released = await inner.releaseLease(lease)
        const state = states.get(lease.key)
        if (released && state !== undefined) states.set(lease.key, { ...state, fence: 0 })
        return released
      },
    }
  },

  'unfenced put accepted over a live lease': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        if (options?.lease !== undefined) return inner.put(key, value, options)
        const live = await inner.getLease(key)
        return inner.put(key, value, live === null ? options : { ...options, lease: live })
      },
    }
  },
}
