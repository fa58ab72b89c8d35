import type { Backend } from '@agent-state/core'

/**
 * The `watch` of `inner`, for a test wrapper that copies `inner`'s
 * capabilities: a wrapper claiming `changeNotification` must have `watch`
 * (docs/contract.md, Change notification), else a waiter that trusts the
 * claim would wait for hints that never come.
 */
export function watchOf(inner: Backend): Pick<Backend, 'watch'> {
  const watch = inner.watch
  return watch === undefined
    ? {}
    : { watch: (prefix, options) => watch.call(inner, prefix, options) }
}
