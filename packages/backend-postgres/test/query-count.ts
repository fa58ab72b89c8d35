import { isAgentStateError } from '@agent-state/core'
import pg from 'pg'

/** Statements sent by every `pg.Client` of this process since {@link countQueries}. */
export interface QueryCounts {
  /** Statements sent while their connection had none in flight (one behind another rides along). */
  roundTrips: number
  statements: number
  /** Statements that notify (`pg_notify`): change hints. */
  hints: number
  /** Each change hint's namespace and the keys it named, in the order they were sent. */
  readonly hinted: { namespace: string; keys: string[] }[]
}

/**
 * Counts, on the client, what this process sends: wraps `pg.Client`'s
 * `query` (every pooled connection is a `pg.Client`; node-postgres pipeline
 * mode keeps several in flight). For tests and benchmarks only. Returns the
 * live counters and the unwrapped `query`, for statements that must not count.
 */
export function countQueries(): {
  counts: QueryCounts
  uncounted: typeof pg.Client.prototype.query
} {
  const counts: QueryCounts = { roundTrips: 0, statements: 0, hints: 0, hinted: [] }
  const inFlight = new WeakMap<object, number>()
  const query = pg.Client.prototype.query
  pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
    const pending = inFlight.get(this) ?? 0
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string }).text
    counts.statements++
    if (text?.includes('pg_notify') === true) {
      counts.hints++
      const params = args[1] as unknown[] | undefined
      const named = params?.[1]
      counts.hinted.push({
        namespace: String(params?.[0]),
        keys: Array.isArray(named) ? named.map(String) : [String(named)],
      })
    }
    if (pending === 0) counts.roundTrips++
    inFlight.set(this, pending + 1)
    const settle = () => inFlight.set(this, (inFlight.get(this) ?? 1) - 1)
    const result = (query as (...a: unknown[]) => unknown).apply(this, args)
    if (result instanceof Promise) result.then(settle, settle)
    else settle()
    return result
  } as typeof query
  return { counts, uncounted: query }
}

/** What {@link cost} measured: round trips and statements, and the error code if the call failed. */
export interface QueryCost {
  roundTrips: number
  statements: number
  code?: string
}

/**
 * Runs `call` and returns the round trips and statements it sent (counted
 * on `counts`, from {@link countQueries}), and its error code if it failed.
 */
export async function cost(counts: QueryCounts, call: () => Promise<unknown>): Promise<QueryCost> {
  const before = { ...counts }
  let code: string | undefined
  try {
    await call()
  } catch (error) {
    code = isAgentStateError(error) ? error.code : String(error)
  }
  return {
    roundTrips: counts.roundTrips - before.roundTrips,
    statements: counts.statements - before.statements,
    ...(code === undefined ? {} : { code }),
  }
}
