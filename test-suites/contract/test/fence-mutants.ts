import {
  type Backend,
  fenceLost,
  fenceUnsupported,
  type Lease,
  type PutOptions,
  type ValueMeta,
} from '@agent-state/core'
import { createMemoryBackend, type MemoryStore } from '@agent-state/memory'
import type { ContractContext } from '../src/index.js'
import type { MutantFactory } from './memory-mutants.js'

/**
 * Memory backends whose cross-key fence (`PutOptions.fence`) is broken one
 * way each. Each checks the fence itself (wrongly) and then writes through
 * the correct backend without it.
 */

function base(store: MemoryStore, ctx: ContractContext): Backend {
  return createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
}

/** `options` without the fence (the unfenced write the mutant then makes). */
function unfenced(options: PutOptions): PutOptions {
  const { fence: _fence, ...rest } = options
  return rest
}

/**
 * A backend whose fenced put is `fencedPut`; unfenced puts and the argument
 * checks stay the correct backend's (a fence on its own key, or with `lease`,
 * is still refused).
 */
function withFencedPut(
  inner: Backend,
  fencedPut: (
    key: string,
    value: Uint8Array,
    options: PutOptions,
    fence: Lease,
  ) => Promise<ValueMeta>,
): Backend {
  return {
    ...inner,
    put(key, value, options) {
      const fence = options?.fence
      if (fence === undefined || fence.key === key || options?.lease !== undefined) {
        return inner.put(key, value, options)
      }
      return fencedPut(key, value, options as PutOptions, fence)
    },
  }
}

/** The fence key's state as the mutants judge it (its raw stored lease). */
function storedLease(store: MemoryStore, ctx: ContractContext, key: string) {
  return store.namespace(ctx.namespace).states.get(key)?.lease ?? null
}

/**
 * The correct answer of a backend that does not claim `crossKeyFence`: the
 * memory backend without the claim, refusing every fenced write. The
 * reference the unclaimed check passes on (the memory backend claims it).
 */
export function memoryWithoutFenceClaim(store: MemoryStore, ctx: ContractContext): Backend {
  const inner = base(store, ctx)
  const { crossKeyFence: _claim, ...capabilities } = inner.capabilities
  return {
    ...withFencedPut(inner, () => Promise.reject(fenceUnsupported(inner.name))),
    capabilities,
  }
}

/** The cross-key fence mutants, by name. */
export const FENCE_MUTANTS: Record<string, MutantFactory> = {
  'a fence on the written key itself taken as its lease': (store) => (ctx) => {
    const inner = base(store, ctx)
    return {
      ...inner,
      put(key, value, options) {
        const fence = options?.fence
        if (fence === undefined || fence.key !== key) return inner.put(key, value, options)
        return inner.put(key, value, { ...unfenced(options as PutOptions), lease: fence })
      },
    }
  },
  'a fence is ignored and the write stored unfenced': (store) => (ctx) => {
    const inner = base(store, ctx)
    return withFencedPut(inner, (key, value, options) => inner.put(key, value, unfenced(options)))
  },
  'a fence judged by holder name instead of token': (store) => (ctx) => {
    const inner = base(store, ctx)
    return withFencedPut(inner, (key, value, options, fence) => {
      const current = storedLease(store, ctx, fence.key)
      if (current === null || current.holder !== fence.holder || current.expiresAt <= ctx.clock()) {
        return Promise.reject(fenceLost(key, fence, current?.token ?? null))
      }
      return inner.put(key, value, unfenced(options))
    })
  },
  'a fence that never expires': (store) => (ctx) => {
    const inner = base(store, ctx)
    return withFencedPut(inner, (key, value, options, fence) => {
      const current = storedLease(store, ctx, fence.key)
      if (current === null || current.token !== fence.token) {
        return Promise.reject(fenceLost(key, fence, current?.token ?? null))
      }
      return inner.put(key, value, unfenced(options))
    })
  },
  'a fence checked after the precondition': (store) => (ctx) => {
    const inner = base(store, ctx)
    return withFencedPut(inner, async (key, value, options) => {
      const current = await inner.head(key)
      const failed =
        (options.ifMatch !== undefined && current?.version !== options.ifMatch) ||
        (options.ifNoneMatch === '*' && current !== null)
      // The precondition answers first: its PRECONDITION_FAILED hides a stale fence.
      if (failed) return inner.put(key, value, unfenced(options))
      return inner.put(key, value, options)
    })
  },
  "a fence that stands in for the written key's own lease": (store) => (ctx) => {
    const inner = base(store, ctx)
    return withFencedPut(inner, async (key, value, options, fence) => {
      const own = await inner.getLease(key)
      if (own === null) return inner.put(key, value, options)
      // The key's own live lease is passed as if the fence had been it: no LEASE_HELD.
      const current = storedLease(store, ctx, fence.key)
      if (current === null || current.token !== fence.token || current.expiresAt <= ctx.clock()) {
        throw fenceLost(key, fence, current?.token ?? null)
      }
      return inner.put(key, value, { ...unfenced(options), lease: own })
    })
  },
  'a racy fence (awaits between the fence check and the write)': (store) => (ctx) => {
    const inner = base(store, ctx)
    return withFencedPut(inner, async (key, value, options, fence) => {
      const current = storedLease(store, ctx, fence.key)
      if (current === null || current.token !== fence.token || current.expiresAt <= ctx.clock()) {
        throw fenceLost(key, fence, current?.token ?? null)
      }
      await new Promise((resolve) => setTimeout(resolve, 5))
      return inner.put(key, value, unfenced(options))
    })
  },
  'a backend without the claim stores a fenced write unfenced': (store) => (ctx) => {
    const inner = base(store, ctx)
    const { crossKeyFence: _claim, ...capabilities } = inner.capabilities
    return {
      ...withFencedPut(inner, (key, value, options) => inner.put(key, value, unfenced(options))),
      capabilities,
    }
  },
}
