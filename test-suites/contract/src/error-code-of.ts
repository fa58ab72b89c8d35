import { isAgentStateError } from '@agent-state/core'

/**
 * What a promise settles to, for tests that check error codes: the
 * `AgentStateError` code it rejects with, or `"resolved"`. Any other rejection
 * is rethrown, so a crash can never be mistaken for the expected code (a
 * `.rejects.toThrow()` would accept it).
 *
 * @example
 * ```ts
 * expect(await errorCodeOf(backend.put(key, value, { ifVersion: stale }))).toBe('PRECONDITION_FAILED')
 * ```
 */
export async function errorCodeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isAgentStateError(error)) return error.code
    throw error
  }
  return 'resolved'
}
