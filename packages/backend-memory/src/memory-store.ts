import { compareUtf8, type KeyState } from '@agent-state/core'

/** One namespace's keys: their states, and every key in UTF-8 byte order for listing. */
export interface MemoryNamespace {
  readonly states: Map<string, KeyState>
  /** Every key with a state (deleted ones included), sorted with `compareUtf8`. */
  readonly sortedKeys: string[]
}

/**
 * Storage shared by memory backend instances. Create one and pass it to
 * several `createMemoryBackend` calls to make instances that race on the same
 * keys, as the contract suite does.
 */
export interface MemoryStore {
  /** The namespace's data, created on first use. */
  namespace(name: string): MemoryNamespace
  /** Forgets a namespace entirely. */
  drop(name: string): void
}

/** Creates an empty {@link MemoryStore}. */
export function createMemoryStore(): MemoryStore {
  const namespaces = new Map<string, MemoryNamespace>()
  return {
    namespace(name) {
      let found = namespaces.get(name)
      if (found === undefined) {
        found = { states: new Map(), sortedKeys: [] }
        namespaces.set(name, found)
      }
      return found
    },
    drop(name) {
      namespaces.delete(name)
    },
  }
}

/**
 * Index of the first key in `sorted` that is greater than `bound` (or, with
 * `inclusive`, greater than or equal to it), by binary search in byte order.
 */
export function indexAfter(sorted: readonly string[], bound: string, inclusive = false): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const mid = (low + high) >>> 1
    const order = compareUtf8(sorted[mid] as string, bound)
    if (order < 0 || (order === 0 && !inclusive)) low = mid + 1
    else high = mid
  }
  return low
}

/** Stores `state` for `key`, adding the key to the sorted index if it is new. */
export function setState(ns: MemoryNamespace, key: string, state: KeyState): void {
  if (!ns.states.has(key)) {
    const at = indexAfter(ns.sortedKeys, key)
    ns.sortedKeys.splice(at, 0, key)
  }
  ns.states.set(key, state)
}
