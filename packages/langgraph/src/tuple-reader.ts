import { AgentStateError, type Backend, mapLimited, type StoredValue } from '@agent-state/core'
import {
  type CheckpointPendingWrite,
  type CheckpointTuple,
  compareWritesSortKeys,
  maxChannelVersion,
  type SerializerProtocol,
  TASKS,
  writesSortKey,
} from '@langchain/langgraph-checkpoint'
import {
  type ChannelSources,
  decodeCheckpointRecord,
  type InlineValue,
  type SourceCache,
  type StoredMeta,
  sourcesOf,
} from './checkpoint-record.js'
import type { KeyLayout } from './key-layout.js'
import { listKeys } from './list-keys.js'
import { readMany } from './read-many.js'
import { decodeRecord } from './record-codec.js'
import {
  type BodyHeader,
  isBlobHeader,
  isBodyHeader,
  isWriteHeader,
  type MetaHeader,
  type WriteHeader,
} from './records.js'
import { type Epochs, isCommitted, readEpochs } from './thread-ownership.js'

/** What the reader needs from its saver. */
export interface ReaderContext {
  readonly backend: Backend
  readonly layout: KeyLayout
  readonly serde: SerializerProtocol
  readonly concurrency: number
  /** The saver has thread ownership: its records are stamped, so reads need the thread's epochs. */
  readonly owned: boolean
  /** The epochs this saver last wrote to a thread's head (`ThreadOwnership.knownEpochs`). */
  readonly knownEpochs: (threadId: string) => Epochs | undefined
  /** Channel sources of checkpoints read or written, for `put` (filled by every load). */
  readonly sources: SourceCache
  nextVersion(current: number | undefined): number
}

/**
 * Judges owner stamps: by the epochs this saver last wrote to the thread's
 * head when they commit the stamp (the head's epochs only grow, see
 * `ThreadOwnership.knownEpochs`), else by the head, read at most once per call.
 * An owner's reads of its own records so read no head, however long ago its
 * lease was taken or renewed; a record of a writer that took the thread over
 * (a token the owner's epochs do not know) sends it to the head.
 */
export class EpochCache {
  private readonly cache = new Map<string, Promise<Epochs>>()
  /** `known`: the epochs this saver last wrote to a thread's head (`ThreadOwnership.knownEpochs`). */
  constructor(
    private readonly backend: Backend,
    private readonly layout: KeyLayout,
    private readonly known: (threadId: string) => Epochs | undefined = () => undefined,
  ) {}

  async committed(threadId: string, stamp: MetaHeader['o']): Promise<boolean> {
    if (stamp === undefined) return true
    if (isCommitted(stamp, this.known(threadId))) return true
    return isCommitted(stamp, await this.read(threadId))
  }

  /**
   * Starts reading the thread's head now, beside the reads that follow, for a
   * saver with ownership that has no epochs of its own for the thread (its
   * records are stamped, so it will need the head's).
   */
  prefetch(threadId: string): void {
    if (this.known(threadId) !== undefined) return
    this.read(threadId).catch(() => {}) // awaited, with its error, by `committed`
  }

  private read(threadId: string): Promise<Epochs> {
    let epochs = this.cache.get(threadId)
    if (epochs === undefined) {
      epochs = readEpochs(this.backend, this.layout, threadId)
      this.cache.set(threadId, epochs)
    }
    return epochs
  }
}

/** The checkpoint record at metadata key `key` (format 1 or 2), or `null`. */
export async function readMeta(backend: Backend, key: string): Promise<StoredMeta | null> {
  const stored = await backend.get(key)
  return stored === null ? null : decodeCheckpointRecord(stored.value, key)
}

/** The checkpoint records at metadata keys `keys`, read together (`readMany`), in their order. */
export async function readMetas(
  backend: Backend,
  keys: readonly string[],
  concurrency: number,
): Promise<(StoredMeta | null)[]> {
  const stored = await readMany(backend, keys, concurrency)
  return stored.map((entry, i) =>
    entry === null ? null : decodeCheckpointRecord(entry.value, keys[i] as string),
  )
}

/**
 * The checkpoint records one call reads, each read at most once: those of
 * the checkpoints it loads and those holding inherited channel values (many
 * checkpoints of a chain name the same holder, often one the call also loads).
 */
export class HolderReads {
  private readonly records = new Map<string, Promise<StoredMeta | null>>()
  constructor(private readonly backend: Backend) {}

  /**
   * Starts reading the records at `keys` that no read asked for yet, together
   * (one native `getMany`: one statement on PostgreSQL), so the `read`s that
   * follow find them. Only on a backend with a native `getMany`: elsewhere a
   * shared read would make each record wait for the slowest of the batch,
   * where the reads one by one are as concurrent and each ready on its own.
   * Should the shared read fail, each of its keys is read again on its own,
   * so an error (a corrupt record) surfaces only at its own key.
   */
  prefetch(keys: readonly string[], concurrency: number): void {
    if (typeof this.backend.getMany !== 'function') return
    const fresh = [...new Set(keys)].filter((key) => !this.records.has(key))
    if (fresh.length < 2) return
    const batch = readMany(this.backend, fresh, concurrency)
    for (const [i, key] of fresh.entries()) {
      const record = batch.then(
        (entries) => {
          const stored = entries[i] ?? null
          return stored === null ? null : decodeCheckpointRecord(stored.value, key)
        },
        () => readMeta(this.backend, key),
      )
      record.catch(() => {}) // awaited, with its error, by `read` of its key
      this.records.set(key, record)
    }
  }

  /** The record at `key` (read once), or `null`. */
  read(key: string): Promise<StoredMeta | null> {
    let record = this.records.get(key)
    if (record === undefined) {
      record = readMeta(this.backend, key)
      this.records.set(key, record)
    }
    return record
  }
}

/** The parent's channel sources for `put`: remembered, else read from its record (none when absent). */
export async function parentSources(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  parentId: string | null,
): Promise<ChannelSources> {
  if (parentId === null) return new Map()
  const key = ctx.layout.checkpoint(threadId, ns, parentId).meta
  const known = ctx.sources.get(key)
  if (known !== undefined) return known
  const parent = await readMeta(ctx.backend, key)
  return parent === null ? new Map() : sourcesOf(parent)
}

/**
 * The pending writes under `writes`: a prefix (listed here), or their keys
 * when a listing of the checkpoint's records already named them.
 */
async function readWrites(
  ctx: ReaderContext,
  threadId: string,
  writes: string | readonly string[],
  epochs: EpochCache,
): Promise<CheckpointPendingWrite[]> {
  const keys = typeof writes === 'string' ? await listKeys(ctx.backend, writes) : writes
  const records = (await readMany(ctx.backend, keys, ctx.concurrency)).map((stored, i) =>
    stored === null ? null : decodeRecord(stored.value, keys[i] as string, isWriteHeader),
  )
  // One write per (task, idx): a regular write keeps the first owner's (INSERT OR IGNORE),
  // a special one (error, interrupt, ...) the last owner's, as LangGraph's own savers do.
  const chosen = new Map<string, { header: WriteHeader; payload: Uint8Array }>()
  for (const record of records) {
    if (record === null || !(await epochs.committed(threadId, record.header.o))) continue
    const slot = `${record.header.task}\u0000${record.header.idx}`
    const previous = chosen.get(slot)
    const token = record.header.o?.[0] ?? 0
    const previousToken = previous?.header.o?.[0] ?? 0
    if (
      previous === undefined ||
      (record.header.idx < 0 ? token > previousToken : token < previousToken)
    ) {
      chosen.set(slot, record)
    }
  }
  const ordered = [...chosen.values()].sort((a, b) =>
    compareWritesSortKeys(
      writesSortKey(a.header.path, a.header.task, a.header.idx),
      writesSortKey(b.header.path, b.header.task, b.header.idx),
    ),
  )
  return Promise.all(
    ordered.map(
      async ({ header, payload }): Promise<CheckpointPendingWrite> => [
        header.task,
        header.ch,
        await ctx.serde.loadsTyped(header.t, payload),
      ],
    ),
  )
}

/** The reads of a checkpoint's body (format 1 only) and pending writes, started before its metadata is judged. */
export interface TupleReads {
  readonly body: Promise<StoredValue | null> | undefined
  readonly writes: Promise<CheckpointPendingWrite[]>
}

/**
 * Starts reading checkpoint `checkpointId`'s pending writes (by `writeKeys`
 * when a listing named them, else by listing their prefix) and, when a
 * listing showed a format-1 body record (`readBody`), its body. A caller
 * that learns the checkpoint is not to be loaded drops them unread.
 */
export function startTupleReads(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  checkpointId: string,
  epochs: EpochCache,
  listed?: { readonly writeKeys?: readonly string[] | undefined; readonly hasBody: boolean },
): TupleReads {
  const keys = ctx.layout.checkpoint(threadId, ns, checkpointId)
  const reads = {
    body: listed?.hasBody === true ? ctx.backend.get(keys.body) : undefined,
    writes: readWrites(ctx, threadId, listed?.writeKeys ?? keys.writes, epochs),
  }
  // Awaited, with their errors, by loadTuple; dropped reads must not be unhandled rejections.
  reads.body?.catch(() => {})
  reads.writes.catch(() => {})
  return reads
}

/** A format-1 checkpoint's body record, decoded; `undefined` when the checkpoint was deleted meanwhile. */
async function formatOneBody(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  meta: StoredMeta,
  read: Promise<StoredValue | null> | undefined,
): Promise<{ ct: string; body: Uint8Array } | undefined> {
  const keys = ctx.layout.checkpoint(threadId, ns, meta.header.id)
  const stored = await (read ?? ctx.backend.get(keys.body))
  if (stored === null) {
    if ((await ctx.backend.head(keys.meta)) === null) return undefined
    throw new AgentStateError('CORRUPT', 'A LangGraph checkpoint has metadata but no body', {
      context: { threadId, checkpointNs: ns, checkpointId: meta.header.id, key: keys.body },
    })
  }
  const body = decodeRecord<BodyHeader>(stored.value, keys.body, isBodyHeader)
  return { ct: body.header.ct, body: body.payload }
}

/**
 * The value of `channel` at `version` for checkpoint `meta`: inline in its
 * record, else in the record of the checkpoint that introduced it, else
 * (format 1, or that record pruned) in the channel value record `v/...`.
 */
async function channelValue(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  meta: StoredMeta,
  channel: string,
  version: string,
  holders: HolderReads,
): Promise<InlineValue | undefined> {
  const inline = meta.inline?.values.get(channel)
  if (inline?.version === version) return inline
  const source = meta.inline?.from[channel]
  if (source !== undefined && source[1] === version) {
    const holder = await holders.read(ctx.layout.checkpoint(threadId, ns, source[0]).meta)
    const held = holder?.inline?.values.get(channel)
    if (held?.version === version) return held
  }
  const key = ctx.layout.blob(threadId, ns, channel, version)
  const blob = await ctx.backend.get(key)
  if (blob === null) return undefined
  const record = decodeRecord(blob.value, key, isBlobHeader)
  return { version, type: record.header.t, payload: record.payload }
}

/**
 * The full tuple of a committed checkpoint whose record was read: its body,
 * its channel values and its pending writes (from `reads`, when they were
 * started beside the record's read). Format 2 holds the body and the values
 * it introduced; inherited values come from their holders' records
 * (`holders`, shared by one call). Resolves `undefined` when a format-1
 * checkpoint was deleted in between (its metadata is gone too); a body
 * missing under live metadata is `CORRUPT`.
 */
export async function loadTuple(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  meta: StoredMeta,
  epochs: EpochCache,
  reads: TupleReads = startTupleReads(ctx, threadId, ns, meta.header.id, epochs),
  holders: HolderReads = new HolderReads(ctx.backend),
): Promise<CheckpointTuple | undefined> {
  const [body, pendingWrites] = await Promise.all([
    meta.inline ?? formatOneBody(ctx, threadId, ns, meta, reads.body),
    reads.writes,
  ])
  if (body === undefined) return undefined
  const checkpoint = await ctx.serde.loadsTyped(body.ct, body.body)
  const versions = Object.entries(checkpoint.channel_versions ?? {}) as Array<[string, unknown]>
  const blobs = await mapLimited(versions, ctx.concurrency, async ([channel, version]) => {
    const value = await channelValue(ctx, threadId, ns, meta, channel, String(version), holders)
    if (value === undefined || value.type === 'empty') return undefined
    return [channel, await ctx.serde.loadsTyped(value.type, value.payload)] as const
  })
  const values: Record<string, unknown> = {}
  for (const blob of blobs) if (blob !== undefined) values[blob[0]] = blob[1]
  checkpoint.channel_values = values
  const parent = meta.header.parent
  if (checkpoint.v < 4 && parent !== null) {
    await migratePendingSends(ctx, threadId, ns, parent, checkpoint, epochs)
  }
  ctx.sources.set(ctx.layout.checkpoint(threadId, ns, meta.header.id).meta, sourcesOf(meta))
  const tuple: CheckpointTuple = {
    config: {
      configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: meta.header.id },
    },
    checkpoint,
    metadata: await ctx.serde.loadsTyped(meta.header.mt, meta.payload),
    pendingWrites,
  }
  if (parent !== null) {
    tuple.parentConfig = {
      configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: parent },
    }
  }
  return tuple
}

/** Checkpoints before format 4 kept pending sends as writes of the parent: move them into `TASKS`. */
async function migratePendingSends(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  parentId: string,
  checkpoint: {
    channel_values: Record<string, unknown>
    channel_versions: Record<string, unknown>
  },
  epochs: EpochCache,
): Promise<void> {
  const parentWrites = await readWrites(
    ctx,
    threadId,
    ctx.layout.checkpoint(threadId, ns, parentId).writes,
    epochs,
  )
  checkpoint.channel_values[TASKS] = parentWrites
    .filter(([, channel]) => channel === TASKS)
    .map(([, , value]) => value)
  const known = Object.values(checkpoint.channel_versions) as number[]
  checkpoint.channel_versions[TASKS] =
    known.length > 0 ? maxChannelVersion(...known) : ctx.nextVersion(undefined)
}
