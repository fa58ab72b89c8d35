import type { Backend } from '@agent-state/core'
import type { z } from 'zod'
import { wakeError } from '../shared/errors.js'

const decoder = new TextDecoder('utf-8', { fatal: true })

/**
 * Reads a small JSON record of the wake layer (a resume registration, a
 * webhook trigger): `null` when absent, else the value `schema` gives, which
 * must also pass `belongs` (it names the key's own id). Anything else is
 * `EVENT_CORRUPT` naming `what` and the key, never an empty answer.
 */
export async function readStoredJson<T>(
  backend: Backend,
  key: string,
  schema: z.ZodType<T>,
  what: string,
  belongs: (value: T) => boolean,
): Promise<T | null> {
  const stored = await backend.get(key)
  if (stored === null) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(stored.value))
  } catch (cause) {
    throw wakeError('EVENT_CORRUPT', `${what} ${key} is not JSON`, { key }, cause)
  }
  const result = schema.safeParse(parsed)
  if (!result.success || !belongs(result.data)) {
    throw wakeError('EVENT_CORRUPT', `${what} ${key} fails its schema`, { key })
  }
  return result.data
}
