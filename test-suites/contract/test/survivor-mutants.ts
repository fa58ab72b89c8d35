import {
  AgentStateError,
  type Backend,
  createRecordBackend,
  getManyByGets,
  isAgentStateError,
  type StoredValue,
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
 * Deliberately broken backends for the checks added against the survivors of the Stryker run
 * (mutation-testing.md): each reproduces, outside the mutated source, what a surviving mutant of
 * core's key-state.ts or record-backend.ts did, and passed the suite before its check. Then one
 * broken `getMany` per multi-key read check (checks/get-many.ts), over the memory backend.
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

type GetMany = (inner: Backend, keys: readonly string[]) => Promise<(StoredValue | null)[]>

/**
 * The memory backend with a `getMany`: core's generic one (`getManyByGets`), which the mutant
 * test takes as the correct reference for the multi-key read checks, or `broken`. Assigned on
 * the instance, so what the backend carries beside its methods stays.
 */
export function memoryWithGetMany(
  store: MemoryStore,
  ctx: ContractContext,
  broken?: GetMany,
): Backend {
  const inner = createMemoryBackend({ store, namespace: ctx.namespace, clock: ctx.clock })
  const read: GetMany = broken ?? ((b, keys) => getManyByGets(b, keys))
  return Object.assign(inner, { getMany: (keys: readonly string[]) => read(inner, keys) })
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

  // Multi-key read: the entries in byte order of their keys (a backend that returns the rows of
  // `key = ANY(…)` as the index gives them, without putting them back in the order asked).
  'getMany answers in key order instead of the order asked': (store) => (ctx) =>
    memoryWithGetMany(store, ctx, async (b, keys) => {
      const sorted = [...keys].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
      return getManyByGets(b, sorted)
    }),

  // Multi-key read: one decoded value handed to every duplicate of its key.
  'getMany hands duplicates one shared value': (store) => (ctx) =>
    memoryWithGetMany(store, ctx, async (b, keys) => {
      const distinct = [...new Set(keys)]
      const values = await getManyByGets(b, distinct)
      return keys.map((key) => values[distinct.indexOf(key)] ?? null)
    }),

  // Multi-key read: keys matched after Unicode normalization (a map keyed by NFC forms).
  'getMany matches keys after NFC normalization': (store) => (ctx) =>
    memoryWithGetMany(store, ctx, (b, keys) =>
      getManyByGets(
        b,
        keys.map((k) => k.normalize('NFC')),
      ),
    ),

  // Multi-key read: no bound on the number of keys (each key still checked by its get).
  'getMany without a bound on the number of keys': (store) => (ctx) =>
    memoryWithGetMany(store, ctx, (b, keys) => Promise.all(keys.map((key) => b.get(key)))),

  // Multi-key read: a closed backend answered as if it held nothing.
  'getMany answers nulls after close': (store) => (ctx) =>
    memoryWithGetMany(store, ctx, (b, keys) =>
      getManyByGets(b, keys).catch((error: unknown) => {
        if (isAgentStateError(error, 'CLOSED')) return keys.map(() => null)
        throw error
      }),
    ),

  // Multi-key read: a key that fails its read answered as absent instead of failing the call.
  'getMany answers null for an invalid key': (store) => (ctx) =>
    memoryWithGetMany(store, ctx, (b, keys) =>
      Promise.all(keys.map((key) => b.get(key).catch(() => null))),
    ),
}
