import { compareUtf8, type KeyState } from '@agent-state/core'

/** One namespace's keys: their states, and every key in UTF-8 byte order for listing. */
export interface MemoryNamespace {
  readonly states: Map<string, KeyState>
  /**
   * Every key with a state (deleted ones included), sorted with `compareUtf8`.
   * In the namespaces of {@link createMemoryStore} this is a getter: keys
   * created since the last read are merged in when it is read, so a create
   * does not pay for keeping the whole array sorted.
   */
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

/**
 * A namespace whose sorted index is brought up to date lazily. A create
 * appends its key to `created` (O(1)); the next read of `sortedKeys` sorts
 * those k keys and merges them into the index in one backward pass
 * (O(k log k + k log N) comparisons, at most N moves). A listing after each
 * single create costs what the eager insertion cost before (one binary search
 * and one shift), so no sequence of operations is slower than with `splice`.
 */
class LazilySortedNamespace implements MemoryNamespace {
  readonly states = new Map<string, KeyState>()
  /** Keys given a state since the index was last merged, in creation order. */
  readonly created: string[] = []
  private readonly sorted: string[] = []

  get sortedKeys(): string[] {
    if (this.created.length > 0) mergeInto(this.sorted, this.created)
    return this.sorted
  }
}

/** Creates an empty {@link MemoryStore}. */
export function createMemoryStore(): MemoryStore {
  const namespaces = new Map<string, MemoryNamespace>()
  return {
    namespace(name) {
      let found = namespaces.get(name)
      if (found === undefined) {
        found = new LazilySortedNamespace()
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
  return searchBefore(sorted, bound, inclusive, sorted.length)
}

/** {@link indexAfter} within `sorted[0, end)`. */
function searchBefore(
  sorted: readonly string[],
  bound: string,
  inclusive: boolean,
  end: number,
): number {
  let low = 0
  let high = end
  while (low < high) {
    const mid = (low + high) >>> 1
    const order = compareUtf8(sorted[mid] as string, bound)
    if (order < 0 || (order === 0 && !inclusive)) low = mid + 1
    else high = mid
  }
  return low
}

/**
 * Merges `created` (keys not in `sorted`, no repeats) into `sorted` in place
 * and empties `created`. Walks backwards from the end so each old key moves
 * at most once, and only the keys after the smallest new one move at all.
 */
function mergeInto(sorted: string[], created: string[]): void {
  created.sort(compareUtf8)
  let read = sorted.length - 1
  // Grow with real values (not `length +=`) so the array stays packed.
  for (const key of created) sorted.push(key)
  let write = sorted.length - 1
  for (let c = created.length - 1; c >= 0; c--) {
    const key = created[c] as string
    const at = searchBefore(sorted, key, false, read + 1)
    while (read >= at) sorted[write--] = sorted[read--] as string
    sorted[write--] = key
  }
  created.length = 0
}

/** Stores `state` for `key`, adding the key to the sorted index if it is new. */
export function setState(ns: MemoryNamespace, key: string, state: KeyState): void {
  if (!ns.states.has(key)) {
    if (ns instanceof LazilySortedNamespace) ns.created.push(key)
    else {
      // A namespace from a caller's own MemoryStore: keep its array sorted eagerly.
      ns.sortedKeys.splice(indexAfter(ns.sortedKeys, key), 0, key)
    }
  }
  ns.states.set(key, state)
}
