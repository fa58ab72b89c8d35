import type { Backend } from '@agent-state/core'

/**
 * In-process change signals of daemon queues. The Backend contract has no
 * change notifications, so a waiter in another process polls; a waiter in
 * the process that made the change (through the same backend instance) is
 * woken at once by these signals instead of waiting for its next poll.
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
