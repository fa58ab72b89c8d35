import {
  checkGetManyKeys,
  MAX_KEY_BYTES,
  metaOf,
  type StoredValue,
  spreadDistinct,
} from '@agent-state/core'
import { declareAnswer } from './answer-check.js'
import type { Connection } from './connection.js'
import { decodeState, type StateRow } from './row-codec.js'
import { ENTRIES_TABLE } from './schema.js'
import { NOW_MS, STATE_COLUMNS, STATE_NAMES } from './statements.js'

/**
 * The native `getMany`: every distinct key in ONE statement, `key = ANY($2)`
 * on the primary key (namespace, key), one round trip whatever the number of
 * keys (at most core's `MAX_GET_MANY_KEYS`). The statement reads one snapshot
 * of the table, a stronger answer than the contract asks (each entry as `get`
 * would answer at some instant). Rows are decoded by `get`'s row codec
 * (value size and CRC-32 checked: a corrupt row fails the whole call with
 * `CORRUPT`), then put back in the order asked; a key without a row, or with
 * a row that holds only a lease and its fence, is `null`.
 */
export function getManySql(schema: string): string {
  // Declared like every statement of statements.ts: its answer is checked to be its own
  // (answer-check.ts: a pooler may pass on another client's answer).
  return declareAnswer(
    `SELECT ${NOW_MS} AS now_ms, e.key, ${STATE_COLUMNS}, e.value
     FROM ${schema}.${ENTRIES_TABLE} e
     WHERE e.namespace = $1 AND e.key = ANY($2::text[])`,
    ['now_ms', 'key', ...STATE_NAMES, 'value'],
  )
}

/** What the native `getMany` needs of the backend it is wired into. */
export interface GetManyDeps {
  readonly connection: Connection
  readonly namespace: string
  readonly schema: string
  /** Throws `CLOSED` once the backend is closed. */
  readonly assertOpen: () => void
}

/** The backend's `getMany` (see {@link getManySql}). */
export function postgresGetMany(
  deps: GetManyDeps,
): (keys: readonly string[]) => Promise<(StoredValue | null)[]> {
  const text = getManySql(deps.schema)
  return async (keys) => {
    deps.assertOpen()
    checkGetManyKeys(keys, MAX_KEY_BYTES)
    if (keys.length === 0) return []
    const distinct = [...new Set(keys)]
    const found = await deps.connection.use('getMany', false, async (client) => {
      const result = await client.query<StateRow & { key: string }>(text, [
        deps.namespace,
        distinct,
      ])
      const byKey = new Map<string, StoredValue | null>()
      for (const row of result.rows) {
        const { state } = decodeState(row.key, row)
        const meta = metaOf(row.key, state)
        byKey.set(row.key, meta === null ? null : { value: state.value, meta })
      }
      return byKey
    })
    return spreadDistinct(keys, (key) => found.get(key))
  }
}
