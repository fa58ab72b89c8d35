import type { Backend, StoredValue } from './backend.js'
import { AgentStateError, isAgentStateError } from './errors.js'
import { assertValidKey } from './keys.js'
import { mapLimited } from './map-limited.js'

/**
 * Most keys one `getMany` call may name (duplicates counted); more is `INVALID_ARGUMENT`.
 * Bounds one call's memory and one statement's parameter array (docs/contract.md, Multi-key reads).
 */
export const MAX_GET_MANY_KEYS = 1000

/** How many `get`s {@link getMany} keeps in flight on a backend without a native `getMany`. */
export const GET_MANY_CONCURRENCY = 16

/**
 * Checks the argument of `getMany` before anything is read: an array
 * (`INVALID_ARGUMENT`), at most {@link MAX_GET_MANY_KEYS} entries
 * (`INVALID_ARGUMENT`, checked first: it costs nothing), then every key
 * (`INVALID_KEY` naming the first bad one and its position).
 */
export function checkGetManyKeys(
  keys: unknown,
  maxKeyBytes: number,
): asserts keys is readonly string[] {
  if (!Array.isArray(keys)) {
    throw new AgentStateError('INVALID_ARGUMENT', 'getMany takes an array of keys', {
      context: { got: typeof keys },
    })
  }
  if (keys.length > MAX_GET_MANY_KEYS) {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `getMany takes at most ${MAX_GET_MANY_KEYS} keys, got ${keys.length}`,
      { context: { keys: keys.length, max: MAX_GET_MANY_KEYS } },
    )
  }
  for (let index = 0; index < keys.length; index++) {
    try {
      assertValidKey(keys[index], maxKeyBytes)
    } catch (error) {
      if (!isAgentStateError(error)) throw error
      throw new AgentStateError(error.code, `getMany key ${index}: ${error.message}`, {
        context: { ...error.context, index },
      })
    }
  }
}

/**
 * The answer of `getMany` for `keys` from one read per distinct key (`read`
 * answers a distinct key's value or `null`): in the order of `keys`, each
 * duplicate with a copy of its value, so a caller that mutates one entry's
 * bytes never changes another's (as two `get`s would not).
 */
export function spreadDistinct(
  keys: readonly string[],
  read: (key: string) => StoredValue | null | undefined,
): (StoredValue | null)[] {
  const given = new Set<string>()
  return keys.map((key) => {
    const found = read(key) ?? null
    if (found === null) return null
    if (!given.has(key)) {
      given.add(key)
      return found
    }
    // A copy even when the value is a Buffer, whose slice() is a view of the same bytes.
    return { value: new Uint8Array(found.value), meta: found.meta }
  })
}

/**
 * `getMany` built from `get`: validated as the contract says, then one `get`
 * per distinct key, at most `concurrency` in flight. What {@link getMany}
 * falls back to; exported for backends and tests that want the generic path
 * as their `getMany`.
 */
export async function getManyByGets(
  backend: Pick<Backend, 'get' | 'capabilities'>,
  keys: readonly string[],
  concurrency = GET_MANY_CONCURRENCY,
): Promise<(StoredValue | null)[]> {
  checkGetManyKeys(keys, backend.capabilities.maxKeyBytes)
  const distinct = [...new Set(keys)]
  const values = await mapLimited(distinct, concurrency, (key) => backend.get(key))
  const byKey = new Map(distinct.map((key, i) => [key, values[i] ?? null]))
  return spreadDistinct(keys, (key) => byKey.get(key))
}

/** Options of {@link getMany}. */
export interface GetManyOptions {
  /** `get`s in flight without a native `getMany`; default {@link GET_MANY_CONCURRENCY}. */
  readonly concurrency?: number
}

/**
 * Reads several keys: the backend's native `getMany` when it has one (one
 * round trip on PostgreSQL), otherwise {@link getManyByGets}. Either way the
 * keys are checked first (nothing is read for a bad argument) and the
 * results come in the order of `keys`, `null` for a key with no value.
 */
export async function getMany(
  backend: Pick<Backend, 'get' | 'getMany' | 'capabilities'>,
  keys: readonly string[],
  options: GetManyOptions = {},
): Promise<(StoredValue | null)[]> {
  if (typeof backend.getMany !== 'function') {
    return getManyByGets(backend, keys, options.concurrency)
  }
  checkGetManyKeys(keys, backend.capabilities.maxKeyBytes)
  // Nothing to read: no call (a native getMany would cost a round trip for nothing).
  return keys.length === 0 ? [] : backend.getMany(keys)
}
