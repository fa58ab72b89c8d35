import type { Backend } from '@agent-state/core'

/** What a backend was asked since the last reset: the counts that load does not change. */
export interface BackendTally {
  /** Calls by method name. */
  calls: Record<string, number>
  /** Entries all `list` calls returned. */
  listed: number
  /** Bytes of the values `get` returned. */
  readBytes: number
}

/**
 * `backend` behind a proxy that counts every call, the entries listed and the value bytes
 * read into a {@link BackendTally}: how the UI's tests and benchmarks tell what one view asked
 * of the backend (test/ui-scale.test.ts, benchmarks/src/ui-views.ts and ui-render.ts).
 */
export function countingBackend(backend: Backend): {
  readonly backend: Backend
  /** The tally since the last {@link reset}. */
  tally(): BackendTally
  reset(): void
} {
  let tally: BackendTally = { calls: {}, listed: 0, readBytes: 0 }
  const wrapped = new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const name = String(property)
        tally.calls[name] = (tally.calls[name] ?? 0) + 1
        const answer = value.apply(target, args)
        // What is not a promise (a `watch` stream) is handed back as it is.
        if (!(answer instanceof Promise)) return answer
        return answer.then((done) => {
          if (name === 'list') tally.listed += done.entries.length
          if (name === 'get' && done !== null) tally.readBytes += done.value.length
          return done
        })
      }
    },
  })
  return {
    backend: wrapped,
    tally: () => tally,
    reset: () => {
      tally = { calls: {}, listed: 0, readBytes: 0 }
    },
  }
}
