import { isAgentStateError } from '@agent-state/core'

/** The code a promise rejects with (`'resolved'` when it does not); rethrows foreign errors. */
export async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
  } catch (error) {
    if (isAgentStateError(error)) return error.code
    throw error
  }
  return 'resolved'
}
