import type { Backend } from '@agent-state/core'

/** How often the page refreshes on a backend without change notification. */
export const POLL_INTERVAL_MS = 5000

/** Quiet time after a change before the page is told, so a burst of writes is one refresh. */
export const CHANGE_DEBOUNCE_MS = 300

/** How many event streams one server keeps open at most (each holds a socket). */
export const MAX_STREAMS = 16

/** How the pages learn that the state changed. */
export type FeedMode = 'push' | 'poll'

/** What a subscriber is told: something may have changed. */
export type ChangeListener = () => void

/**
 * One source of "the state may have changed" for every open page of a server: the backend's
 * own `watch('')` where it claims change notification (one watch, however many pages; its
 * first hint, the `resync` that says the watch is established, is not a change), else a timer
 * every {@link POLL_INTERVAL_MS}. It runs only while a page listens, and stops with the last.
 * A watch that fails falls back to the timer rather than leaving the pages stale.
 */
export function createChangeFeed(backend: Backend) {
  const listeners = new Set<ChangeListener>()
  let mode: FeedMode = backend.watch === undefined ? 'poll' : 'push'
  let stop: (() => void) | undefined
  let debounce: NodeJS.Timeout | undefined

  const notify = (): void => {
    clearTimeout(debounce)
    debounce = setTimeout(() => {
      for (const listener of listeners) listener()
    }, CHANGE_DEBOUNCE_MS)
  }

  const poll = (): (() => void) => {
    mode = 'poll'
    const timer = setInterval(() => {
      for (const listener of listeners) listener()
    }, POLL_INTERVAL_MS)
    return () => clearInterval(timer)
  }

  const start = (): void => {
    if (mode === 'poll' || backend.watch === undefined) {
      stop = poll()
      return
    }
    const abort = new AbortController()
    stop = () => abort.abort()
    const hints = backend.watch('', { signal: abort.signal })
    void (async () => {
      let first = true
      for await (const _hint of hints) {
        if (first) first = false
        else notify()
      }
    })().catch(() => {
      if (abort.signal.aborted) return
      // The watch broke: poll from now on, and tell the pages once, for what it may have missed.
      stop = poll()
      notify()
    })
  }

  return {
    /** `push` (the backend's watch) or `poll` (a timer). */
    get mode(): FeedMode {
      return mode
    },
    /** Adds a listener; resolves a function that removes it. */
    subscribe(listener: ChangeListener): () => void {
      listeners.add(listener)
      if (listeners.size === 1) start()
      return () => {
        listeners.delete(listener)
        if (listeners.size === 0) {
          stop?.()
          stop = undefined
          clearTimeout(debounce)
        }
      }
    },
    /** How many listeners there are. */
    get size(): number {
      return listeners.size
    },
  }
}

/** See {@link createChangeFeed}. */
export type ChangeFeed = ReturnType<typeof createChangeFeed>
