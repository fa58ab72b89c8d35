/**
 * A backend wrapper that counts every call by method name, so a test asserts how many
 * backend operations a path costs (a count, which load does not change; never a time).
 */
import type { Backend } from '@agent-state/core'

/** `backend` with its calls counted: `calls()` since the last `reset()`. */
export function countingBackend(backend: Backend): {
  readonly backend: Backend
  calls(): Readonly<Record<string, number>>
  reset(): void
} {
  let calls: Record<string, number> = {}
  const wrapped = new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        const name = String(property)
        calls[name] = (calls[name] ?? 0) + 1
        return value.apply(target, args)
      }
    },
  })
  return {
    backend: wrapped,
    calls: () => ({ ...calls }),
    reset: () => {
      calls = {}
    },
  }
}
