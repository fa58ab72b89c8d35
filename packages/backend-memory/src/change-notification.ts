import {
  assertWatchPrefix,
  type ChangeHint,
  type ChangeNotificationCapability,
  createWatchSet,
  failedWatch,
  type WatchOptions,
  type WatchSet,
} from '@agent-state/core'
import type { MemoryStore } from './memory-store.js'

/**
 * What the memory backend claims: hints are handed over synchronously inside
 * the write, after its state is stored, so the only delay is the watcher's
 * own event loop. 50 ms covers a loaded host's scheduling.
 */
export const MEMORY_CHANGE_NOTIFICATION: ChangeNotificationCapability = {
  mode: 'push',
  maxDelayMs: 50,
}

/** Why the memory backend's watch has no channel to interrupt (its `WATCH_INTERRUPT` seam). */
export const MEMORY_IN_PROCESS =
  'hints are handed over in-process inside the write: there is no channel to lose'

/**
 * The watch sets of every instance, per store and namespace: a write by any
 * instance feeds every instance's watches on the same namespace. Weak by
 * store, so a dropped store takes its listeners with it.
 */
const buses = new WeakMap<MemoryStore, Map<string, Set<WatchSet>>>()

function bus(store: MemoryStore, namespace: string): Set<WatchSet> {
  let byNamespace = buses.get(store)
  if (byNamespace === undefined) {
    byNamespace = new Map()
    buses.set(store, byNamespace)
  }
  let sets = byNamespace.get(namespace)
  if (sets === undefined) {
    sets = new Set()
    byNamespace.set(namespace, sets)
  }
  return sets
}

/** Announces a stored write or delete of `key`: call it after the new state is in the store. */
export function announceKey(store: MemoryStore, namespace: string, key: string): void {
  const sets = buses.get(store)?.get(namespace)
  if (sets !== undefined) for (const set of sets) set.key(key)
}

/** Announces that the whole namespace changed (destroy): every watcher hears about its prefix. */
export function announceAll(store: MemoryStore, namespace: string): void {
  const sets = buses.get(store)?.get(namespace)
  if (sets !== undefined) for (const set of sets) set.prefixChanged('')
}

/**
 * One instance's `watch`: the stream joins the instance's watch set, which
 * is on the namespace's bus while it has a stream. The first hint (`resync`)
 * is queued at once: the watch is established when `watch` returns.
 */
export function watchMemory(
  store: MemoryStore,
  namespace: string,
  watches: WatchSet,
  prefix: string,
  options: WatchOptions | undefined,
  assertOpen: () => void,
): AsyncIterable<ChangeHint> {
  try {
    assertOpen()
    assertWatchPrefix(prefix)
  } catch (error) {
    return failedWatch(error)
  }
  const sets = bus(store, namespace)
  const stream = watches.open(prefix, {
    signal: options?.signal,
    onEnd() {
      if (watches.size === 0) sets.delete(watches)
    },
  })
  if (stream.ended) return stream
  sets.add(watches)
  stream.resync()
  return stream
}

/**
 * A memory record map, by identity only: the watches need nothing of its
 * contents, and naming its type here would make `memory-record-store.ts`
 * and this file import each other.
 */
type RecordMapIdentity = object

/** The record watches of every memory record map (weak: a dropped map takes them along). */
const recordWatches = new WeakMap<RecordMapIdentity, WatchSet>()

function recordWatchSet(records: RecordMapIdentity): WatchSet {
  let set = recordWatches.get(records)
  if (set === undefined) {
    set = createWatchSet()
    recordWatches.set(records, set)
  }
  return set
}

/** Announces a stored record write or removal (after it is in the map). */
export function announceRecord(records: RecordMapIdentity, key: string): void {
  recordWatches.get(records)?.key(key)
}

/** Announces that every record went (destroy). */
export function announceAllRecords(records: RecordMapIdentity): void {
  recordWatches.get(records)?.prefixChanged('')
}

/**
 * The record store's `watch` (the optional RecordStore hook): every store on
 * the map shares one watch set; `createRecordBackend` has checked the prefix
 * and ends the stream through the signal.
 */
export function watchRecords(
  records: RecordMapIdentity,
  prefix: string,
  options: WatchOptions,
): AsyncIterable<ChangeHint> {
  const stream = recordWatchSet(records).open(prefix, { signal: options.signal })
  stream.resync()
  return stream
}
