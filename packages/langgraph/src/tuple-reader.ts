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
import type { KeyLayout } from './key-layout.js'
import { listKeys } from './list-keys.js'
import { decodeRecord } from './record-codec.js'
import {
  type BodyHeader,
  isBlobHeader,
  isBodyHeader,
  isMetaHeader,
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
  nextVersion(current: number | undefined): number
}

/** A checkpoint's metadata record, decoded (its payload still serialized). */
export interface StoredMeta {
  readonly header: MetaHeader
  readonly payload: Uint8Array
}

/** Reads each thread's epochs at most once per call, and only when a stamped record needs them. */
export class EpochCache {
  private readonly cache = new Map<string, Promise<Epochs>>()
  constructor(
    private readonly backend: Backend,
    private readonly layout: KeyLayout,
  ) {}

  async committed(threadId: string, stamp: MetaHeader['o']): Promise<boolean> {
    if (stamp === undefined) return true
    return isCommitted(stamp, await this.read(threadId))
  }

  /**
   * Starts reading the thread's epochs now, beside the reads that follow (a
   * saver with ownership stamps every record, so it will need them).
   */
  prefetch(threadId: string): void {
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

/** The metadata record at `key`, or `null`. */
export async function readMeta(backend: Backend, key: string): Promise<StoredMeta | null> {
  const stored = await backend.get(key)
  return stored === null ? null : decodeRecord(stored.value, key, isMetaHeader)
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
  const records = await mapLimited(keys, ctx.concurrency, async (key) => {
    const stored = await ctx.backend.get(key)
    return stored === null ? null : decodeRecord(stored.value, key, isWriteHeader)
  })
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

/** The reads of a checkpoint's body and pending writes, started before its metadata is judged. */
export interface TupleReads {
  readonly body: Promise<StoredValue | null>
  readonly writes: Promise<CheckpointPendingWrite[]>
}

/**
 * Starts reading checkpoint `checkpointId`'s body and pending writes (by
 * `writeKeys` when a listing named them, else by listing their prefix). A
 * caller that learns the checkpoint is not to be loaded drops them unread.
 */
export function startTupleReads(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  checkpointId: string,
  epochs: EpochCache,
  writeKeys?: readonly string[],
): TupleReads {
  const keys = ctx.layout.checkpoint(threadId, ns, checkpointId)
  const reads = {
    body: ctx.backend.get(keys.body),
    writes: readWrites(ctx, threadId, writeKeys ?? keys.writes, epochs),
  }
  // Awaited, with their errors, by loadTuple; dropped reads must not be unhandled rejections.
  reads.body.catch(() => {})
  reads.writes.catch(() => {})
  return reads
}

/**
 * The full tuple of a committed checkpoint whose metadata was read: its body,
 * its channel values and its pending writes (from `reads`, when they were
 * started beside the metadata's read). Resolves `undefined` when the
 * checkpoint was deleted in between (its metadata is gone too); a body missing
 * under live metadata is `CORRUPT`.
 */
export async function loadTuple(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  meta: StoredMeta,
  epochs: EpochCache,
  reads: TupleReads = startTupleReads(ctx, threadId, ns, meta.header.id, epochs),
): Promise<CheckpointTuple | undefined> {
  const keys = ctx.layout.checkpoint(threadId, ns, meta.header.id)
  const [stored, pendingWrites] = await Promise.all([reads.body, reads.writes])
  if (stored === null) {
    if ((await ctx.backend.head(keys.meta)) === null) return undefined
    throw new AgentStateError('CORRUPT', 'A LangGraph checkpoint has metadata but no body', {
      context: { threadId, checkpointNs: ns, checkpointId: meta.header.id, key: keys.body },
    })
  }
  const body = decodeRecord<BodyHeader>(stored.value, keys.body, isBodyHeader)
  const checkpoint = await ctx.serde.loadsTyped(body.header.ct, body.payload)
  const versions = Object.entries(checkpoint.channel_versions ?? {}) as Array<[string, string]>
  const blobs = await mapLimited(versions, ctx.concurrency, async ([channel, version]) => {
    const key = ctx.layout.blob(threadId, ns, channel, version)
    const blob = await ctx.backend.get(key)
    if (blob === null) return undefined
    const record = decodeRecord(blob.value, key, isBlobHeader)
    if (record.header.t === 'empty') return undefined
    return [channel, await ctx.serde.loadsTyped(record.header.t, record.payload)] as const
  })
  const values: Record<string, unknown> = {}
  for (const blob of blobs) if (blob !== undefined) values[blob[0]] = blob[1]
  checkpoint.channel_values = values
  const parent = meta.header.parent
  if (checkpoint.v < 4 && parent !== null) {
    await migratePendingSends(ctx, threadId, ns, parent, checkpoint, epochs)
  }
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
