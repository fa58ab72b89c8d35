import {
  AgentStateError,
  type Backend,
  isAgentStateError,
  type KeyState,
  type Lease,
} from '@agent-state/core'
import { createMemoryBackend, type MemoryStore } from '@agent-state/memory'
import type { ContractContext } from '../src/index.js'
import type { MutantFactory } from './memory-mutants.js'

/**
 * More deliberately broken memory backends, one per hole the suite used to
 * have (issue 11): each passed the suite before the check that now catches it.
 */

function base(
  store: MemoryStore,
  ctx: ContractContext,
): { inner: Backend; states: Map<string, KeyState> } {
  const inner = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
  return { inner, states: store.namespace(ctx.namespace).states }
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

/** Keys ending in `/.` or `/..` stored under a harmless name instead of being rejected. */
function acceptDots(key: string): string {
  return key.replace(/\/(\.\.?)$/, (_, dots: string) => `/dot${dots.length}`)
}

/** The hole mutants, by name. */
export const HOLE_MUTANTS: Record<string, MutantFactory> = {
  'fencing compares holder names instead of tokens': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    // The current live lease stands in for any lease of the same holder name.
    const swap = async (lease: Lease): Promise<Lease> => {
      const current = await inner.getLease(lease.key)
      return current !== null && current.holder === lease.holder ? current : lease
    }
    return {
      ...inner,
      async put(key, value, options) {
        if (options?.lease === undefined) return inner.put(key, value, options)
        return inner.put(key, value, { ...options, lease: await swap(options.lease) })
      },
      async delete(key, options) {
        if (options?.lease === undefined) return inner.delete(key, options)
        return inner.delete(key, { ...options, lease: await swap(options.lease) })
      },
      renewLease: async (lease) => inner.renewLease(await swap(lease)),
      releaseLease: async (lease) => inner.releaseLease(await swap(lease)),
    }
  },

  'list without a limit returns every key': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      list: (options) =>
        inner.list(options?.limit === undefined ? { ...options, limit: 10_000 } : options),
    }
  },

  'delimiter ignored without a prefix': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async list(options) {
        if (options?.delimiter === undefined || (options.prefix ?? '') !== '') {
          return inner.list(options)
        }
        const { delimiter: _d, ...rest } = options
        return inner.list(rest)
      },
    }
  },

  'listed updatedAt differs from head': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async list(options) {
        const page = await inner.list(options)
        return {
          ...page,
          entries: page.entries.map((e) =>
            e.updatedAt === undefined ? e : { ...e, updatedAt: e.updatedAt + 1 },
          ),
        }
      },
    }
  },

  'trailing dot segments accepted as keys': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      put: (key, value, options) => inner.put(acceptDots(key), value, options),
      get: (key) => inner.get(acceptDots(key)),
      head: (key) => inner.head(acceptDots(key)),
      delete: (key, options) => inner.delete(acceptDots(key), options),
      acquireLease: (key, options) => inner.acquireLease(acceptDots(key), options),
      getLease: (key) => inner.getLease(acceptDots(key)),
    }
  },

  'renew and release still work after close': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    const spare = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
    return {
      ...inner,
      renewLease: (lease) => spare.renewLease(lease),
      releaseLease: (lease) => spare.releaseLease(lease),
    }
  },

  'renew and release of an invalid key answer instead of INVALID_KEY': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    const invalid = async (key: string): Promise<boolean> => {
      try {
        await inner.getLease(key)
        return false
      } catch (error) {
        return isAgentStateError(error, 'INVALID_KEY')
      }
    }
    return {
      ...inner,
      async renewLease(lease) {
        if (await invalid(lease.key)) throw new AgentStateError('LEASE_LOST', 'mutant')
        return inner.renewLease(lease)
      },
      async releaseLease(lease) {
        if (await invalid(lease.key)) return false
        return inner.releaseLease(lease)
      },
    }
  },

  'racy conditional delete (awaits between check and delete)': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async delete(key, options) {
        if (options?.ifMatch === undefined) return inner.delete(key, options)
        const current = await inner.head(key)
        if (current?.version !== options.ifMatch) {
          throw new AgentStateError('PRECONDITION_FAILED', 'mutant', { context: { key, current } })
        }
        await tick()
        const { ifMatch: _m, ...rest } = options
        await inner.delete(key, rest)
        return true
      },
    }
  },

  'writer dropped from the meta of conditional writes': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      async put(key, value, options) {
        const meta = await inner.put(key, value, options)
        const conditional = options?.ifMatch !== undefined || options?.ifNoneMatch !== undefined
        return conditional ? { ...meta, writer: null } : meta
      },
    }
  },

  'a view is stored as its whole underlying buffer': (store) => (ctx) => {
    const { inner } = base(store, ctx)
    return {
      ...inner,
      put: (key, value, options) =>
        inner.put(key, value instanceof Uint8Array ? new Uint8Array(value.buffer) : value, options),
    }
  },

  'a lease is still live at its expiresAt': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    // Stores expiresAt + 1 while reporting expiresAt: expiry happens one millisecond late.
    const late = (key: string): void => {
      const state = states.get(key)
      if (state?.lease != null) {
        states.set(key, {
          ...state,
          lease: { ...state.lease, expiresAt: state.lease.expiresAt + 1 },
        })
      }
    }
    return {
      ...inner,
      async acquireLease(key, options) {
        const lease = await inner.acquireLease(key, options)
        late(key)
        return lease
      },
      async renewLease(lease) {
        const renewed = await inner.renewLease(lease)
        late(lease.key)
        return renewed
      },
      async getLease(key) {
        const lease = await inner.getLease(key)
        return lease === null ? null : { ...lease, expiresAt: lease.expiresAt - 1 }
      },
    }
  },

  'release of an expired unsuperseded lease answers false': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      async releaseLease(lease) {
        const live = await inner.getLease(lease.key)
        if (live?.token === lease.token) return inner.releaseLease(lease)
        const state = states.get(lease.key)
        if (state?.lease?.token === lease.token) states.set(lease.key, { ...state, lease: null })
        return false
      },
    }
  },

  'durable store forgets deleted keys (lease and fencing counter) on reopen': (store) => (ctx) => {
    const { inner, states } = base(store, ctx)
    return {
      ...inner,
      capabilities: { ...inner.capabilities, durable: true },
      async close() {
        for (const [key, state] of states) {
          if (state.version === null && state.revision > 0) states.delete(key)
        }
        await inner.close()
      },
    }
  },
}
