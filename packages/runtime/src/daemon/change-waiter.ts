import type { Backend } from '@agent-state/core'
import { onQueueChange, watchQueueChanges } from './queue-signals.js'

/**
 * What a daemon waiter (`waitForIdle`, a `next()` that waits) sleeps on
 * between two reads of the daemon's records: a change signal, from this
 * process or from the backend's change notification, or the end of a
 * bounded poll interval where there is no notification.
 */
export interface ChangeWaiter {
  /**
   * Whether the backend notifies this waiter of every write to the daemon's
   * records (within its `changeNotification.maxDelayMs`): then a wait needs
   * no poll interval.
   */
  readonly notified: boolean
  /** Forgets earlier signals: call it right before reading, so a change during the read is kept. */
  reset(): void
  /**
   * Resolves `true` once a change was signalled since the last `reset()`
   * (at once if one already was), or `false` after `timeoutMs` or when
   * `signal` aborts.
   */
  wait(timeoutMs: number, signal?: AbortSignal): Promise<boolean>
  /** Ends the watches and the in-process subscription. */
  close(): void
}

/** Opens a {@link ChangeWaiter} on `daemonId`'s records. */
export function openChangeWaiter(backend: Backend, daemonId: string): ChangeWaiter {
  let changed = false
  let wake: (() => void) | null = null
  const signal = () => {
    changed = true
    wake?.()
  }
  const controller = new AbortController()
  const unsubscribe = onQueueChange(backend, daemonId, signal)
  let notified = watchQueueChanges(
    backend,
    daemonId,
    signal,
    () => {
      // The watch ended under us: fall back to polling, and read once more now.
      notified = false
      signal()
    },
    controller.signal,
  )
  return {
    get notified() {
      return notified
    },
    reset() {
      changed = false
    },
    wait(timeoutMs, abort) {
      if (changed) return Promise.resolve(true)
      if (abort?.aborted) return Promise.resolve(false)
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(done, Math.max(0, timeoutMs))
        abort?.addEventListener('abort', done, { once: true })
        function done() {
          clearTimeout(timer)
          abort?.removeEventListener('abort', done)
          wake = null
          resolve(changed)
        }
        wake = done
      })
    },
    close() {
      unsubscribe()
      controller.abort()
    },
  }
}
