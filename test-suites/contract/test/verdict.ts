import { AssertionError } from 'node:assert'

/**
 * The error a check failed with must be the suite's own verdict (an
 * `AssertionError`, directly or as the cause fast-check wraps it in), never
 * a crash of the mutant or of the harness.
 */
export function contractVerdict(error: unknown): AssertionError | undefined {
  for (let e = error; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if (e instanceof AssertionError) return e
  }
  return undefined
}
