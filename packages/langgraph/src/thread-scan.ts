import type { Backend } from '@agent-state/core'
import type { StoredMeta } from './checkpoint-record.js'
import type { CheckpointKeys } from './key-layout.js'
import { type ReaderContext, readMetas } from './tuple-reader.js'

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
    const keys = (page.prefixes ?? []).map((child) => `${child}m`)
    const metas = await readMetas(ctx.backend, keys, ctx.concurrency)
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

/** One checkpoint's records as a listing found them. */
export interface ListedCheckpoint {
  readonly id: string
  readonly keys: CheckpointKeys
  /** Whether its metadata record was listed (a checkpoint still being written has none yet). */
  readonly hasMeta: boolean
  /** Whether a format-1 body record was listed (a format-2 checkpoint is one record). */
  readonly hasBody: boolean
  /** Its pending writes' keys, in key order; `undefined`: not listed (read their prefix). */
  readonly writeKeys?: readonly string[] | undefined
}

/**
 * The checkpoints of a thread's namespace, newest first, in pages, from ONE
 * undelimited listing of their records (metadata, body and pending writes are
 * neighbours in key order): a caller learns each checkpoint's pending-write
 * keys without listing them one checkpoint at a time. A checkpoint whose
 * records straddle two listing pages is yielded with the later page.
 * `keysPerPage` is the first listing page's size (1 to 1000); later pages
 * take `laterKeysPerPage` (1000), so a checkpoint with many pending writes
 * costs a listing per 1000 of them, not per `keysPerPage`.
 */
export async function* checkpointsNewestFirst(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  keysPerPage: number,
  laterKeysPerPage = 1000,
): AsyncGenerator<ListedCheckpoint[]> {
  const prefix = ctx.layout.checkpointsPrefix(threadId, ns)
  let limit = Math.max(1, Math.min(keysPerPage, 1000))
  let open: { base: string; keys: string[] } | undefined
  const finish = ({ base, keys }: { base: string; keys: string[] }): ListedCheckpoint => {
    const id = ctx.layout.checkpointIdOf(prefix, base)
    const checkpoint = ctx.layout.checkpointUnder(base)
    return {
      id,
      keys: checkpoint,
      hasMeta: keys.includes(checkpoint.meta),
      hasBody: keys.includes(checkpoint.body),
      writeKeys: keys.filter((key) => key.startsWith(checkpoint.writes)),
    }
  }
  let cursor: string | undefined
  do {
    const page = await ctx.backend.list(
      cursor === undefined ? { prefix, limit } : { prefix, limit, cursor },
    )
    const done: ListedCheckpoint[] = []
    for (const { key } of page.entries) {
      const base = key.slice(0, key.indexOf('/', prefix.length) + 1)
      if (open?.base !== base) {
        if (open !== undefined) done.push(finish(open))
        open = { base, keys: [] }
      }
      open.keys.push(key)
    }
    cursor = page.cursor
    limit = Math.max(1, Math.min(laterKeysPerPage, 1000))
    if (cursor === undefined && open !== undefined) {
      done.push(finish(open))
      open = undefined
    }
    if (done.length > 0) yield done
  } while (cursor !== undefined)
}
