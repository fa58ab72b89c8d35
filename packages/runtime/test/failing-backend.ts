import { AgentStateError, type Backend } from '@agent-state/core'
import { watchOf } from './watch-of.js'

/** A backend whose `put` can be made to fail, to prove a failed persist changes nothing. */
export interface FailingBackend extends Backend {
  /** While true, every `put` rejects with `UNAVAILABLE` and stores nothing. */
  failPuts: boolean
  /** Makes the next `put` of a key matching `pattern` (only that one) reject with `UNAVAILABLE`. */
  failNextPut(pattern: RegExp): void
  /** How many puts were refused. */
  readonly refused: number
}

/**
 * Wraps `inner`, delegating everything except the puts it is told to fail
 * (`watch` too, so the capabilities it copies stay true).
 */
export function withFailingPuts(inner: Backend): FailingBackend {
  let refused = 0
  let failNext: RegExp | null = null
  const wrapper: FailingBackend = {
    contractVersion: inner.contractVersion,
    name: `${inner.name}+failing-puts`,
    capabilities: inner.capabilities,
    failPuts: false,
    failNextPut(pattern) {
      failNext = pattern
    },
    get refused() {
      return refused
    },
    get: (key) => inner.get(key),
    head: (key) => inner.head(key),
    async put(key, value, options) {
      const once = failNext?.test(key) === true
      if (once) failNext = null
      if (wrapper.failPuts || once) {
        refused++
        throw new AgentStateError('UNAVAILABLE', 'injected put failure')
      }
      return inner.put(key, value, options)
    },
    delete: (key, options) => inner.delete(key, options),
    list: (options) => inner.list(options),
    acquireLease: (key, options) => inner.acquireLease(key, options),
    renewLease: (lease) => inner.renewLease(lease),
    releaseLease: (lease) => inner.releaseLease(lease),
    getLease: (key) => inner.getLease(key),
    ...watchOf(inner),
    close: () => inner.close(),
  }
  return wrapper
}
