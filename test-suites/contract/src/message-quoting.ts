import { type Backend, isAgentStateError } from '@agent-state/core'

/**
 * A valid key holding C1 controls (U+0085, U+009B) and bidirectional
 * formatting characters (U+202A, U+202E, U+2066, U+2069): `JSON.stringify`
 * prints all of them raw, so a message quoting it that way can hide or
 * reorder text on a terminal or in a log viewer.
 */
export const UNSAFE_MESSAGE_KEY = 'quoted/\u0085\u009b\u202a\u202e\u2066\u2069'

/** A lease holder with the same kind of characters. */
export const UNSAFE_MESSAGE_HOLDER = 'holder\u202e\u009f'

/** Characters that must never reach a message raw. */
const RAW = /[\u0080-\u009f\u202a-\u202e\u2066-\u2069]/u

/** How the key and the holder must appear: every such character as a `\uXXXX` escape. */
const ESCAPED_KEY = 'quoted/\\u0085\\u009b\\u202a\\u202e\\u2066\\u2069'
const ESCAPED_HOLDER = 'holder\\u202e\\u009f'

async function failureOf(
  what: string,
  operation: Promise<unknown>,
): Promise<{ what: string; code: string; message: string }> {
  try {
    await operation
  } catch (error) {
    if (isAgentStateError(error)) return { what, code: error.code, message: error.message }
    throw error
  }
  throw new Error(`${what} was expected to fail`)
}

/**
 * Provokes three errors whose messages quote {@link UNSAFE_MESSAGE_KEY} (a
 * `PRECONDITION_FAILED`, a `LEASE_HELD` naming {@link UNSAFE_MESSAGE_HOLDER},
 * a `LEASE_LOST`) and returns what is wrong with them: `[]` when each has its
 * code and shows the key (and the holder) with every C1 control and bidi
 * formatting character escaped, none raw. Closes `backend`.
 *
 * @example
 * ```ts
 * expect(await messageQuotingProblems(createMyBackend())).toEqual([])
 * ```
 */
export async function messageQuotingProblems(backend: Backend): Promise<string[]> {
  const value = new TextEncoder().encode('v')
  const key = UNSAFE_MESSAGE_KEY
  const failures = []
  try {
    await backend.put(key, value)
    failures.push(
      await failureOf('PRECONDITION_FAILED', backend.put(key, value, { ifMatch: 'not-a-version' })),
    )
    const lease = await backend.acquireLease(key, { holder: UNSAFE_MESSAGE_HOLDER, ttlMs: 60_000 })
    failures.push(
      await failureOf('LEASE_HELD', backend.acquireLease(key, { holder: 'other', ttlMs: 60_000 })),
    )
    await backend.releaseLease(lease)
    failures.push(await failureOf('LEASE_LOST', backend.renewLease(lease)))
  } finally {
    await backend.close()
  }
  const problems: string[] = []
  for (const { what, code, message } of failures) {
    const shown = JSON.stringify(message)
    if (code !== what) problems.push(`expected ${what}, got ${code}: ${shown}`)
    const raw = RAW.exec(message)
    if (raw !== null) {
      const codePoint = (raw[0].codePointAt(0) ?? 0).toString(16).padStart(4, '0')
      problems.push(`${what} message prints U+${codePoint.toUpperCase()} raw: ${shown}`)
    }
    if (!message.includes(ESCAPED_KEY))
      problems.push(`${what} message lacks the escaped key: ${shown}`)
    if (what === 'LEASE_HELD' && !message.includes(ESCAPED_HOLDER)) {
      problems.push(`${what} message lacks the escaped holder: ${shown}`)
    }
  }
  return problems
}
