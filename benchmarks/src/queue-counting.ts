/**
 * A backend wrapper that counts the calls made through it, for the queue
 * benchmark's calls-per-operation columns: a count, unlike a latency, does
 * not change with the load on the machine.
 */
import type { Backend } from '@agent-state/core'

/** Calls made through a {@link countingBackend}, by method name. */
export type CallCounts = Record<string, number>

/** `inner` with every method call counted in `counts` (the methods run on `inner` itself). */
export function countingBackend(inner: Backend): { backend: Backend; counts: CallCounts } {
  const counts: CallCounts = {}
  const backend = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      // The native queue's operations count as `nativeQueue.<method>` calls.
      if (property === 'nativeQueue' && value !== undefined) {
        return countingMethods(value as object, counts, 'nativeQueue.')
      }
      if (typeof value !== 'function' || typeof property !== 'string') return value
      // Bound to the real instance: backends keep state in private fields a proxy cannot reach.
      return (...args: unknown[]) => {
        counts[property] = (counts[property] ?? 0) + 1
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return { backend, counts }
}

/** `inner`'s methods counted in `counts` under `prefix` + their name (run on `inner`). */
function countingMethods<T extends object>(inner: T, counts: CallCounts, prefix: string): T {
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || typeof property !== 'string') return value
      return (...args: unknown[]) => {
        counts[prefix + property] = (counts[prefix + property] ?? 0) + 1
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
}

/** The total of `counts`, or of its methods in `only`. */
export function totalCalls(counts: CallCounts, only?: readonly string[]): number {
  return Object.entries(counts)
    .filter(([name]) => only === undefined || only.includes(name))
    .reduce((sum, [, n]) => sum + n, 0)
}
