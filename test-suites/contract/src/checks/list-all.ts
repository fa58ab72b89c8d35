import type { Backend, ListOptions } from '@agent-state/core'
import { fail } from '../assert.js'

/** Byte-order comparison through real UTF-8 encoding, independent of core's `compareUtf8`. */
export function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))
}

function ensureSorted(keys: readonly string[], what: string): void {
  for (let i = 1; i < keys.length; i++) {
    if (byteCompare(keys[i - 1] as string, keys[i] as string) >= 0) {
      fail(
        `${what} not in strictly ascending UTF-8 byte order: ${JSON.stringify(keys[i - 1])} before ${JSON.stringify(keys[i])}`,
      )
    }
  }
}

/**
 * Walks every page of a listing and returns the keys (and, with a delimiter,
 * the prefixes) in order. Fails when a page's entries or prefixes are out of
 * byte order.
 */
export async function listAll(backend: Backend, options: ListOptions): Promise<string[]> {
  const out: string[] = []
  let cursor: string | undefined
  for (let pages = 0; ; pages++) {
    if (pages > 100_000) fail('listing did not terminate')
    const page = await backend.list(cursor === undefined ? options : { ...options, cursor })
    const keys = page.entries.map((e) => e.key)
    ensureSorted(keys, 'page entries')
    ensureSorted(page.prefixes ?? [], 'page prefixes')
    if (options.limit !== undefined && keys.length + (page.prefixes?.length ?? 0) > options.limit) {
      fail(`a page holds more than limit ${options.limit} items`)
    }
    out.push(...[...keys, ...(page.prefixes ?? [])].sort(byteCompare))
    if (page.cursor === undefined) return out
    cursor = page.cursor
  }
}
