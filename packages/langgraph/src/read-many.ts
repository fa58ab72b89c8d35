import { type Backend, getMany, MAX_GET_MANY_KEYS, type StoredValue } from '@agent-state/core'

/**
 * Reads the records at `keys` through core's `getMany` (one statement per
 * chunk on PostgreSQL, concurrent `get`s elsewhere, `concurrency` in flight),
 * in chunks of the contract's `MAX_GET_MANY_KEYS`, one chunk after another.
 * Entries in the order of `keys`, `null` for a key with no record.
 */
export async function readMany(
  backend: Backend,
  keys: readonly string[],
  concurrency: number,
): Promise<(StoredValue | null)[]> {
  if (keys.length <= MAX_GET_MANY_KEYS) return getMany(backend, keys, { concurrency })
  const out: (StoredValue | null)[] = []
  for (let start = 0; start < keys.length; start += MAX_GET_MANY_KEYS) {
    const chunk = keys.slice(start, start + MAX_GET_MANY_KEYS)
    out.push(...(await getMany(backend, chunk, { concurrency })))
  }
  return out
}
