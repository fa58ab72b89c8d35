import { AgentStateError, type Backend } from '@agent-state/core'

/** A backend whose `put` can be made to fail, to prove a failed persist changes nothing. */
export interface FailingBackend extends Backend {
  /** While true, every `put` rejects with `UNAVAILABLE` and stores nothing. */
  failPuts: boolean
  /** How many puts were refused. */
  readonly refused: number
}

/** Wraps `inner`, delegating everything except `put` while `failPuts` is set. */
export function withFailingPuts(inner: Backend): FailingBackend {
  let refused = 0
  const wrapper: FailingBackend = {
    contractVersion: inner.contractVersion,
    name: `${inner.name}+failing-puts`,
    capabilities: inner.capabilities,
    failPuts: false,
    get refused() {
      return refused
    },
    get: (key) => inner.get(key),
    head: (key) => inner.head(key),
    async put(key, value, options) {
      if (wrapper.failPuts) {
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
    close: () => inner.close(),
  }
  return wrapper
}
