import { mapLimited } from '@agent-state/core'
import { type StoredMeta, spilledValues } from './checkpoint-record.js'
import { listKeys } from './list-keys.js'
import { readMany } from './read-many.js'
import { decodeRecord } from './record-codec.js'
import { isBodyHeader, isWriteHeader } from './records.js'
import { EpochCache, type ReaderContext, readMetas } from './tuple-reader.js'

/** What one `prune` removed. */
export interface PruneResult {
  /** Committed checkpoints removed (uncommitted leftovers are removed too, not counted). */
  readonly checkpoints: number
  /** Pending-write records removed. */
  readonly writes: number
  /** Channel values removed. */
  readonly blobs: number
}

/**
 * The channel value keys (`v/...`) a checkpoint may read: every channel of
 * a format-1 body; the channels a format-2 record does not hold inline (they
 * fall back to that key once their holder's record is pruned).
 */
async function blobKeysOf(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  checkpointId: string,
  meta: StoredMeta | null,
): Promise<string[]> {
  let ct: string
  let bytes: Uint8Array
  if (meta?.inline !== undefined) {
    ct = meta.inline.ct
    bytes = meta.inline.body
  } else {
    // Format 1, also a crashed put's body without its metadata record.
    const key = ctx.layout.checkpoint(threadId, ns, checkpointId).body
    const stored = await ctx.backend.get(key)
    if (stored === null) return []
    const body = decodeRecord(stored.value, key, isBodyHeader)
    ct = body.header.ct
    bytes = body.payload
  }
  const checkpoint = await ctx.serde.loadsTyped(ct, bytes)
  return Object.entries(checkpoint.channel_versions ?? {})
    .filter(([channel]) => meta?.inline?.values.has(channel) !== true)
    .map(([channel, version]) => ctx.layout.blob(threadId, ns, channel, String(version)))
}

/** The write records among `keys` that no owner epoch committed (a stale owner's leftovers). */
async function uncommittedWrites(
  ctx: ReaderContext,
  threadId: string,
  keys: readonly string[],
  epochs: EpochCache,
): Promise<string[]> {
  const records = await readMany(ctx.backend, keys, ctx.concurrency)
  const stale = await Promise.all(
    records.map(async (stored, i) => {
      const key = keys[i] as string
      if (stored === null) return undefined
      const record = decodeRecord(stored.value, key, isWriteHeader)
      return (await epochs.committed(threadId, record.header.o)) ? undefined : key
    }),
  )
  return stale.filter((key): key is string => key !== undefined)
}

/**
 * Keeps the namespace's latest committed checkpoint and its `keepLast - 1`
 * nearest ancestors (the chain a resumed run continues and
 * `getStateHistory` walks). Everything else goes: older ancestors, other
 * branches, records of stale owners that never committed, and the channel
 * values that only removed checkpoints referenced (values an in-flight `put`
 * is writing are referenced by no checkpoint yet, so they stay). Metadata
 * goes first, so a checkpoint disappears whole before its parts do.
 */
export async function pruneNamespace(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  keepLast: number,
): Promise<PruneResult> {
  const epochs = new EpochCache(ctx.backend, ctx.layout)
  const prefix = ctx.layout.checkpointsPrefix(threadId, ns)
  const keys = await listKeys(ctx.backend, prefix)
  // Each key's checkpoint group `<prefix><inv(id)>/`; listed newest first.
  const groupOf = (key: string): string => key.slice(0, key.indexOf('/', prefix.length) + 1)
  const groups = [...new Set(keys.map(groupOf))]
  const ids = groups.map((group) => ctx.layout.checkpointIdOf(prefix, group))
  const metas = await readMetas(
    ctx.backend,
    groups.map((group) => `${group}m`),
    ctx.concurrency,
  )
  const committed = new Map<string, StoredMeta>()
  for (const meta of metas) {
    if (meta !== null && (await epochs.committed(threadId, meta.header.o))) {
      committed.set(meta.header.id, meta)
    }
  }
  const latest = ids.find((id) => committed.has(id))
  const keep = new Set<string>()
  for (let id = latest; id !== undefined && keep.size < keepLast; ) {
    keep.add(id)
    const parent = committed.get(id)?.header.parent
    id = parent !== null && parent !== undefined && committed.has(parent) ? parent : undefined
  }
  const removedIds = ids.filter((id) => !keep.has(id))
  const removedGroups = new Set(groups.filter((_group, index) => !keep.has(ids[index] as string)))
  const keptMetas = [...keep].flatMap((id) => committed.get(id) ?? [])
  const removed = ids.flatMap((id, index) =>
    keep.has(id) ? [] : [{ id, meta: metas[index] ?? null }],
  )
  const removedMetas = new Map<string, StoredMeta>()
  for (const { id, meta } of removed) if (meta !== null) removedMetas.set(id, meta)
  const [keptBlobs, removedBlobs] = await Promise.all([
    mapLimited(keptMetas, ctx.concurrency, (meta) =>
      blobKeysOf(ctx, threadId, ns, meta.header.id, meta),
    ),
    mapLimited(removed, ctx.concurrency, ({ id, meta }) => blobKeysOf(ctx, threadId, ns, id, meta)),
  ])
  const stillUsed = new Set(keptBlobs.flat())
  const blobs = [...new Set(removedBlobs.flat())].filter((key) => !stillUsed.has(key))
  const removedKeys = keys.filter((key) => removedGroups.has(groupOf(key)))
  const removedRecords = removedKeys.filter((key) => key.endsWith('/m'))
  const removedRest = removedKeys.filter((key) => !key.endsWith('/m'))
  // Stale owners' writes can only exist where a thread head (ownership) exists.
  const owned = (await ctx.backend.head(ctx.layout.owner(threadId))) !== null
  const keptWriteKeys = keys.filter(
    (key) => !removedGroups.has(groupOf(key)) && key.includes('/w/'),
  )
  const staleWrites = owned ? await uncommittedWrites(ctx, threadId, keptWriteKeys, epochs) : []
  const spills = spilledValues(ctx.layout, threadId, ns, keptMetas, removedMetas)
  await mapLimited(spills, ctx.concurrency, (record) => ctx.backend.put(record.key, record.value))
  await mapLimited(removedRecords, ctx.concurrency, (key) => ctx.backend.delete(key))
  await mapLimited([...removedRest, ...staleWrites, ...blobs], ctx.concurrency, (key) =>
    ctx.backend.delete(key),
  )
  return {
    checkpoints: removedIds.filter((id) => committed.has(id)).length,
    writes: removedRest.filter((key) => key.includes('/w/')).length + staleWrites.length,
    blobs: blobs.length,
  }
}
