import type { Backend } from '@agent-state/core'
import { DAEMONS_PREFIX, WORKERS_PREFIX } from '../shared/layout.js'

/**
 * Change signals of daemon queues, from two sources. A waiter in the
 * process that made the change (through the same backend instance) is
 * woken at once by the in-process signals below. A change from anywhere
 * else reaches it through the backend's change notification
 * (`backend.watch`, docs/contract.md) where the backend claims one; where it
 * does not, the waiter polls (see `change-waiter.ts`).
 */
const listeners = new WeakMap<Backend, Map<string, Set<() => void>>>()

/** Tells this process's waiters on `daemonId` that its queue or daemon state changed. */
export function signalQueueChange(backend: Backend, daemonId: string): void {
  const set = listeners.get(backend)?.get(daemonId)
  if (set === undefined) return
  for (const listener of [...set]) listener()
}

/** Calls `listener` on every change signal of `daemonId`; returns the unsubscribe function. */
export function onQueueChange(
  backend: Backend,
  daemonId: string,
  listener: () => void,
): () => void {
  let byDaemon = listeners.get(backend)
  if (byDaemon === undefined) {
    byDaemon = new Map()
    listeners.set(backend, byDaemon)
  }
  let set = byDaemon.get(daemonId)
  if (set === undefined) {
    set = new Set()
    byDaemon.set(daemonId, set)
  }
  set.add(listener)
  return () => {
    set.delete(listener)
    if (set.size === 0) byDaemon.delete(daemonId)
  }
}

/**
 * The key prefixes whose writes can change what a daemon waiter looks at:
 * the queue's records (a trigger, claim or ack) and the worker's (stop,
 * resume, a checkpoint).
 */
export function daemonWatchPrefixes(daemonId: string): readonly string[] {
  return [`${DAEMONS_PREFIX}${daemonId}/`, `${WORKERS_PREFIX}${daemonId}/`]
}

/**
 * Watches the daemon's records through the backend's change notification,
 * calling `listener` on every hint (the first one, `resync`, included: a
 * write made before the watch was established is read on it). Returns
 * `false`, watching nothing, when the backend has no notification. When a
 * watch ends or fails while `signal` is not aborted (the backend was
 * closed), `onLost` is called once: the caller polls from then on.
 */
export function watchQueueChanges(
  backend: Backend,
  daemonId: string,
  listener: () => void,
  onLost: () => void,
  signal: AbortSignal,
): boolean {
  const watch = backend.watch
  if (backend.capabilities.changeNotification === undefined || typeof watch !== 'function') {
    return false
  }
  let lost = false
  const pump = async (prefix: string) => {
    try {
      for await (const _hint of watch.call(backend, prefix, { signal })) listener()
    } catch {
      // A closed backend: the waiter's next read reports it.
    }
    if (!signal.aborted && !lost) {
      lost = true
      onLost()
    }
  }
  for (const prefix of daemonWatchPrefixes(daemonId)) void pump(prefix)
  return true
}
