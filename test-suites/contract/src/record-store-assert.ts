import { compareUtf8, type RecordStore, type ScannedRecord } from '@agent-state/core'
import { storeCall, storeEnsure, storeFail, writeRefused } from './record-store-harness.js'

/** Assertions of the record-store tier; every failure names the `RecordStore` method at fault. */

const encoder = new TextEncoder()
const decoder = new TextDecoder()
/** UTF-8 bytes of `text`. */
export const bytes = (text: string): Uint8Array => encoder.encode(text)
/** Text of UTF-8 `data`. */
export const text = (data: Uint8Array): string => decoder.decode(data)

/** Whether two byte arrays hold the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false
  return true
}

/** Fails naming `read` unless the key holds `data` at `version`. */
export async function expectRecord(
  store: RecordStore,
  key: string,
  data: string,
  version: string,
  what: string,
): Promise<void> {
  const found = await storeCall('read', store.read(key), `read(${JSON.stringify(key)})`)
  storeEnsure('read', found !== null, `${what}: read(${JSON.stringify(key)}) gave null`)
  storeEnsure(
    'read',
    text(found.data) === data,
    `${what}: read(${JSON.stringify(key)}) gave ${JSON.stringify(text(found.data))}, expected ${JSON.stringify(data)}`,
  )
  storeEnsure(
    'read',
    found.version === version,
    `${what}: read(${JSON.stringify(key)}) gave version ${found.version}, the write resolved ${version}`,
  )
}

/** Creates each key with the data `v:<key>`. */
export async function writeAll(store: RecordStore, keys: readonly string[]): Promise<void> {
  for (const key of keys) {
    await storeCall('write', store.write(key, bytes(`v:${key}`), { absent: true }), `write(${key})`)
  }
}

/**
 * Walks a prefix in pages of `limit` with an exclusive `after`, failing on a
 * page that repeats or goes back (an inclusive `after` would loop forever).
 */
export async function walk(
  store: RecordStore,
  prefix: string,
  limit: number,
): Promise<ScannedRecord[]> {
  const all: ScannedRecord[] = []
  let after: string | undefined
  for (let pages = 0; pages < 10_000; pages++) {
    const options = after === undefined ? { prefix, limit } : { prefix, after, limit }
    const page = await storeCall('scan', store.scan(options), `scan(${JSON.stringify(options)})`)
    storeEnsure(
      'scan',
      page.records.length <= limit,
      `scan with limit ${limit} returned ${page.records.length} records`,
    )
    for (const record of page.records) {
      if (after !== undefined && compareUtf8(record.key, after) <= 0) {
        storeFail(
          'scan',
          `scan after ${JSON.stringify(after)} returned ${JSON.stringify(record.key)}: after is exclusive, keys strictly greater only`,
        )
      }
      all.push(record)
      after = record.key
    }
    if (page.done) return all
    storeEnsure(
      'scan',
      page.records.length > 0,
      `scan returned an empty page with done: false (prefix ${JSON.stringify(prefix)})`,
    )
  }
  storeFail('scan', `a walk of prefix ${JSON.stringify(prefix)} never reached done`)
}

/** Fails naming `scan` unless the records are exactly `expected` (with `writeAll` data). */
export function expectKeys(
  got: readonly ScannedRecord[],
  expected: readonly string[],
  what: string,
): void {
  const keys = got.map((r) => r.key)
  storeEnsure(
    'scan',
    JSON.stringify(keys) === JSON.stringify(expected),
    `${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(keys)}`,
  )
  for (const record of got) {
    storeEnsure(
      'scan',
      text(record.data) === `v:${record.key}`,
      `${what}: the record of ${JSON.stringify(record.key)} has the wrong data`,
    )
  }
}

/** Fails naming `write` unless exactly one result won and every other is `PRECONDITION_FAILED`. */
export async function oneWinner(
  results: readonly PromiseSettledResult<string>[],
  what: string,
): Promise<{ index: number; value: string }> {
  let winner: { index: number; value: string } | undefined
  for (const [index, result] of results.entries()) {
    if (result.status === 'fulfilled') {
      if (winner !== undefined) storeFail('write', `${what}: more than one writer won`)
      winner = { index, value: result.value }
    } else {
      await writeRefused(Promise.reject(result.reason), `${what}: a loser`)
    }
  }
  if (winner === undefined) storeFail('write', `${what}: nobody won`)
  return winner
}
