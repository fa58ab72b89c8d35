import type { Backend } from '@agent-state/core'
import { mapLimited } from '@agent-state/core'
import { type ReaderContext, readMeta, type StoredMeta } from './tuple-reader.js'

/** Every key under `prefix`, all pages. */
export async function listKeys(backend: Backend, prefix: string): Promise<string[]> {
  const keys: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list(cursor === undefined ? { prefix } : { prefix, cursor })
    for (const entry of page.entries) keys.push(entry.key)
    cursor = page.cursor
  } while (cursor !== undefined)
  return keys
}

/** Every direct child group (`<prefix><segment>/`) under `prefix`, all pages. */
export async function listChildren(backend: Backend, prefix: string): Promise<string[]> {
  const children: string[] = []
  let cursor: string | undefined
  do {
    const page = await backend.list(
      cursor === undefined ? { prefix, delimiter: '/' } : { prefix, delimiter: '/', cursor },
    )
    children.push(...(page.prefixes ?? []))
    cursor = page.cursor
  } while (cursor !== undefined)
  return children
}

/**
 * The metadata records of a namespace's checkpoints, newest first (the key
 * layout inverts ids), one array per listing page of `pageSize` checkpoints,
 * each page's records read concurrently. Only metadata records are read:
 * never a body. A checkpoint whose metadata is not (yet) stored is skipped.
 */
export async function* metaPagesNewestFirst(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  pageSize: number,
): AsyncGenerator<StoredMeta[]> {
  const prefix = ctx.layout.checkpointsPrefix(threadId, ns)
  const limit = Math.max(1, Math.min(pageSize, 1000))
  let cursor: string | undefined
  do {
    const page = await ctx.backend.list(
      cursor === undefined
        ? { prefix, delimiter: '/', limit }
        : { prefix, delimiter: '/', limit, cursor },
    )
    const metas = await mapLimited(page.prefixes ?? [], ctx.concurrency, (child) =>
      readMeta(ctx.backend, `${child}m`),
    )
    yield metas.filter((meta): meta is StoredMeta => meta !== null)
    cursor = page.cursor
  } while (cursor !== undefined)
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const keysA = Object.keys(a)
  const keysB = Object.keys(b)
  return (
    keysA.length === keysB.length &&
    keysA.every((key) =>
      deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]),
    )
  )
}

/** `list`'s filter: every filter entry equals the metadata's value (structurally, for objects). */
export function metadataMatches(metadata: unknown, filter: Record<string, unknown>): boolean {
  if (typeof metadata !== 'object' || metadata === null) return false
  return Object.entries(filter).every(([key, value]) =>
    deepEqual((metadata as Record<string, unknown>)[key], value),
  )
}
