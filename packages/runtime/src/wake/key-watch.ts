import type { Backend } from '@agent-state/core'

/**
 * The change sources of a path watch (`watchDaemonPaths`): the backend's
 * change notification on each prefix, and the diff of two listings that
 * turns "something changed" into the keys that did.
 */

/** Change hints of a set of key prefixes; see {@link openKeyWatch}. */
export interface KeyWatch {
  /** Whether hints arrive (the backend claims change notification); `false` once a watch ended. */
  readonly notified: boolean
  /** Resolves once every prefix's watch is established (at once when not notified). */
  readonly established: Promise<void>
}

/**
 * Watches `prefixes` with the backend's change notification, calling
 * `onChange` on every hint after the first (`resync`, which only says the
 * watch is established). Where the backend claims none, watches nothing and
 * says so (`notified: false`): the caller polls. A watch that ends while
 * `signal` is not aborted turns `notified` off and calls `onChange` once, so
 * the caller lists again and polls from then on.
 */
export function openKeyWatch(
  backend: Backend,
  prefixes: readonly string[],
  signal: AbortSignal,
  onChange: () => void,
): KeyWatch {
  const watch = backend.watch
  let notified =
    backend.capabilities.changeNotification !== undefined && typeof watch === 'function'
  if (!notified || watch === undefined) return { notified: false, established: Promise.resolve() }
  const established: Promise<void>[] = []
  for (const prefix of prefixes) {
    let first: () => void = () => undefined
    established.push(
      new Promise<void>((resolve) => {
        first = resolve
      }),
    )
    void (async () => {
      let seen = false
      try {
        for await (const _hint of watch.call(backend, prefix, { signal })) {
          if (seen) onChange()
          seen = true
          first()
        }
      } catch {
        // A closed backend or an invalid prefix: the caller's listing reports it.
      }
      first()
      if (!signal.aborted) {
        notified = false
        onChange()
      }
    })()
  }
  return {
    get notified() {
      return notified
    },
    established: Promise.all(established).then(() => undefined),
  }
}

/** The keys whose version differs between two listings (key to version): written, added or deleted. */
export function diffVersions(
  before: ReadonlyMap<string, string>,
  after: ReadonlyMap<string, string>,
): string[] {
  const changed: string[] = []
  for (const [key, version] of after) if (before.get(key) !== version) changed.push(key)
  for (const key of before.keys()) if (!after.has(key)) changed.push(key)
  return changed
}
