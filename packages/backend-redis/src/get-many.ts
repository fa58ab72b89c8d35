import { checkGetManyKeys, type StoredValue, spreadDistinct } from '@agent-state/core'
import type { OperationContext } from './operation-context.js'
import { GET_FIELDS, storedValueOf } from './script-replies.js'

/**
 * The backend's native `getMany`: one `HMGET` of `get`'s fields per distinct
 * key, all sent at once in ONE pipeline (`RedisConnection.hmgetManyBuffer`):
 * one socket write and one round trip whatever the number of keys (at most
 * core's `MAX_GET_MANY_KEYS`), where core's fallback costs one round trip per
 * 16 keys. Every key of a namespace carries the namespace's hash tag, so on a
 * Cluster the whole call is one slot and one node: one round trip there too.
 *
 * A pipeline, not one Lua script reading every key: the contract asks for
 * each entry as `get` would answer at some instant, not one snapshot, and the
 * pipeline costs the server a quarter of the instructions of a script's
 * `redis.call`s and never blocks it for the whole call (measured, benchmarks/FINDINGS.md,
 * "Redis native getMany"). Reads go where `get`'s go: under `replication` on
 * the connection that never carries a `WAIT`.
 *
 * Each reply is decoded by `get`'s own decoding (`storedValueOf`): a damaged
 * record fails the whole call with `CORRUPT`, as does a foreign type under
 * one of the keys (`WRONGTYPE`). Answers come in the order of `keys`, each
 * duplicate with its own copy (core's `spreadDistinct`); the argument is
 * checked by core's `checkGetManyKeys` before anything is sent.
 */
export function redisGetMany(
  ctx: OperationContext,
): (keys: readonly string[]) => Promise<(StoredValue | null)[]> {
  const { connection, layout, capabilities } = ctx
  return async (keys) => {
    ctx.assertOpen()
    checkGetManyKeys(keys, capabilities.maxKeyBytes)
    if (keys.length === 0) return []
    const distinct = [...new Set(keys)]
    const replies = await connection.hmgetManyBuffer(
      'getMany',
      distinct.map((key) => layout.record(key)),
      GET_FIELDS,
    )
    const found = new Map<string, StoredValue | null>()
    for (const [i, key] of distinct.entries()) {
      found.set(key, storedValueOf(key, replies[i] ?? []))
    }
    return spreadDistinct(keys, (key) => found.get(key))
  }
}
