import {
  AgentStateError,
  type Backend,
  createRecordBackend,
  isAgentStateError,
} from '@agent-state/core'
import {
  createMemoryBackend,
  createMemoryRecordMap,
  createMemoryRecordStore,
  type MemoryRecordMap,
  type MemoryStore,
} from '@agent-state/memory'
import type { MutantFactory } from './memory-mutants.js'

/**
 * Deliberately broken backends for the checks added against the survivors of the Stryker run
 * (mutation-testing.md): each reproduces, outside the mutated source, what a surviving mutant of
 * core's key-state.ts or record-backend.ts did, and passed the suite before its check.
 */

const maps = new WeakMap<MemoryStore, Map<string, MemoryRecordMap>>()

/** Core's record backend over a memory record store, one record map per store and namespace. */
function recordBackend(store: MemoryStore, namespace: string, clock: () => number): Backend {
  let perNamespace = maps.get(store)
  if (perNamespace === undefined) {
    perNamespace = new Map()
    maps.set(store, perNamespace)
  }
  let records = perNamespace.get(namespace)
  if (records === undefined) {
    records = createMemoryRecordMap()
    perNamespace.set(namespace, records)
  }
  return createRecordBackend(createMemoryRecordStore({ records }), { clock })
}

const RULE_ERRORS = new Set(['LEASE_HELD', 'LEASE_LOST', 'PRECONDITION_FAILED'])

/** `inner` with every rule error rewritten by `rewrite` (watch and seams are not needed here). */
function rewritingErrors(
  inner: Backend,
  rewrite: (error: AgentStateError) => AgentStateError,
): Backend {
  const wrap =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args)
      } catch (error) {
        if (isAgentStateError(error) && RULE_ERRORS.has(error.code)) throw rewrite(error)
        throw error
      }
    }
  return {
    ...inner,
    put: wrap(inner.put.bind(inner)),
    delete: wrap(inner.delete.bind(inner)),
    acquireLease: wrap(inner.acquireLease.bind(inner)),
    renewLease: wrap(inner.renewLease.bind(inner)),
    releaseLease: wrap(inner.releaseLease.bind(inner)),
  }
}

/** `inner` with every error of `code` from `list`, the point reads and the writes rewritten. */
function blankMessages(inner: Backend, code: string): Backend {
  const wrap =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args)
      } catch (error) {
        if (isAgentStateError(error, code)) {
          throw new AgentStateError(error.code, '', { context: error.context })
        }
        throw error
      }
    }
  return {
    ...inner,
    get: wrap(inner.get.bind(inner)),
    head: wrap(inner.head.bind(inner)),
    put: wrap(inner.put.bind(inner)),
    delete: wrap(inner.delete.bind(inner)),
    list: wrap(inner.list.bind(inner)),
    getLease: wrap(inner.getLease.bind(inner)),
  }
}

/** The mutants, by name. */
export const SURVIVOR_MUTANTS: Record<string, MutantFactory> = {
  // record-backend.ts:127 (the CLOSED message replaced by '').
  'CLOSED with an empty message': (store) => (ctx) =>
    blankMessages(recordBackend(store, ctx.namespace, ctx.clock), 'CLOSED'),

  // cursor.ts:40 (the bad cursor's message replaced by '').
  'a bad cursor refused with an empty message': (store) => (ctx) =>
    blankMessages(recordBackend(store, ctx.namespace, ctx.clock), 'INVALID_ARGUMENT'),

  // key-state.ts:117, 128, 147, 212, 237 (a message replaced by '').
  'lease and precondition errors with an empty message': (store) => (ctx) =>
    rewritingErrors(
      createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock }),
      (error) => new AgentStateError(error.code, '', { context: error.context }),
    ),

  // key-state.ts:118-119, 129-130, 238-239 (the error's options or context replaced by {}).
  'lease and precondition errors without context': (store) => (ctx) =>
    rewritingErrors(
      createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock }),
      (error) => new AgentStateError(error.code, error.message, { context: {} }),
    ),

  // key-state.ts:130, 239 (`current?.token ?? null` as `current?.token && null`).
  'LEASE_LOST reports no current token while another lease is live': (store) => (ctx) =>
    rewritingErrors(
      createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock }),
      (error) =>
        error.code === 'LEASE_LOST'
          ? new AgentStateError(error.code, error.message, {
              context: { ...error.context, currentToken: null },
            })
          : error,
    ),

  // record-backend.ts:115 (the changeNotification claim kept, as undefined, over a store whose
  // watch is unclaimed): the Backend has no watch, so only the key's presence tells.
  'a capability present with the value undefined': (store) => (ctx) => {
    const inner = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
    const { watch: _watch, ...rest } = inner
    const capabilities = { ...inner.capabilities, changeNotification: undefined }
    return { ...rest, capabilities: capabilities as unknown as Backend['capabilities'] }
  },

  // record-backend.ts:371 (`options?.signal` as `options.signal`): a watch that reads its
  // optional options argument unguarded.
  'watch requires its options argument': (store) => (ctx) => {
    const inner = recordBackend(store, ctx.namespace, ctx.clock)
    const watch = inner.watch?.bind(inner)
    if (watch === undefined) throw new Error('the memory record store lost its watch')
    return {
      ...inner,
      watch: (prefix, options) => {
        const signal = (options as NonNullable<typeof options>).signal
        return watch(prefix, signal === undefined ? {} : { signal })
      },
    }
  },

  // record-backend.ts:338 (the store's WATCH_INTERRUPT declaration not carried over to the
  // Backend): the spread copies every method but not the non-enumerable seam.
  "the store's watch-interrupt declaration not carried over": (store) => (ctx) => ({
    ...recordBackend(store, ctx.namespace, ctx.clock),
  }),
}
