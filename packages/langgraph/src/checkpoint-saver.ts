import { randomBytes } from 'node:crypto'
import {
  AgentStateError,
  type Backend,
  isAgentStateError,
  type Lease,
  mapLimited,
  parseOptions,
  quoteForMessage,
} from '@agent-state/core'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  getCheckpointId,
  JsonPlusSerializer,
  type PendingWrite,
} from '@langchain/langgraph-checkpoint'
import { SourceCache } from './checkpoint-record.js'
import { KeyLayout } from './key-layout.js'
import { assertFits } from './limits.js'
import { listKeys } from './list-keys.js'
import { NewestCheckpoints } from './newest-checkpoints.js'
import {
  type CheckpointSaverOptions,
  checkpointSaverOptionsSchema,
  type ResolvedCheckpointSaverOptions,
} from './options.js'
import { buildCheckpointRecord, buildWriteRecords } from './record-builders.js'
import type { OwnerStamp } from './records.js'
import { type PruneResult, pruneNamespace } from './retention.js'
import { ThreadOwnership } from './thread-ownership.js'
import { checkpointsNewestFirst, listChildren } from './thread-scan.js'
import {
  EpochCache,
  HolderReads,
  loadTuple,
  parentSources,
  type ReaderContext,
  readMeta,
  startTupleReads,
} from './tuple-reader.js'

/** A stamp as wide as any real one, so the size check before writing covers the stamped record. */
const WIDEST_STAMP: OwnerStamp = [Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]

import { listCheckpoints, namespaceOf, required } from './checkpoint-list.js'

/**
 * A LangGraph checkpoint saver over any agent-state `Backend`. Create it with
 * {@link createCheckpointSaver}; the package README describes the key layout,
 * the guarantees and the caveats.
 */
export class AgentStateSaver extends BaseCheckpointSaver {
  private readonly backend: Backend
  private readonly layout: KeyLayout
  private readonly concurrency: number
  private readonly keepLast: number | undefined
  private readonly ownership: ThreadOwnership | undefined
  private readonly reader: ReaderContext
  private readonly newest = new NewestCheckpoints()

  /** Use {@link createCheckpointSaver}. */
  constructor(options: ResolvedCheckpointSaverOptions) {
    super(options.serde ?? new JsonPlusSerializer())
    this.backend = options.backend
    this.layout = new KeyLayout(options.prefix)
    this.concurrency = options.concurrency
    this.keepLast = options.keepLast
    this.ownership =
      options.ownership === undefined
        ? undefined
        : new ThreadOwnership(
            this.backend,
            this.layout,
            options.ownership.holder,
            options.ownership.ttlMs,
          )
    this.reader = {
      backend: this.backend,
      layout: this.layout,
      serde: this.serde,
      concurrency: this.concurrency,
      owned: this.ownership !== undefined,
      knownEpochs: (threadId) => this.ownership?.knownEpochs(threadId),
      sources: new SourceCache(),
      nextVersion: (current) => this.getNextVersion(current),
    }
  }

  /** The key layout of this saver (where each record lives), for inspection and tooling. */
  get keys(): KeyLayout {
    return this.layout
  }

  /**
   * Integer part + 1, plus a random fraction: still increasing, and two
   * writers that fork from the same checkpoint never produce the same
   * version, so one can never overwrite the other's channel value.
   */
  override getNextVersion(current: number | undefined): number {
    const base = typeof current === 'number' ? Math.floor(current) : 0
    return base + 1 + randomBytes(4).readUInt32BE() / 2 ** 33
  }

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id
    if (threadId === undefined) return undefined
    if (typeof threadId !== 'string') required(config, 'thread_id', 'getTuple')
    const ns = namespaceOf(config)
    const epochs = new EpochCache(this.backend, this.layout, this.reader.knownEpochs)
    if (this.ownership !== undefined) epochs.prefetch(threadId)
    const checkpointId = getCheckpointId(config)
    const holders = new HolderReads(this.backend)
    if (checkpointId !== '') {
      // The writes are read beside the record, not after it.
      const reads = startTupleReads(this.reader, threadId, ns, checkpointId, epochs)
      const meta = await readMeta(
        this.backend,
        this.layout.checkpoint(threadId, ns, checkpointId).meta,
      )
      if (meta === null || !(await epochs.committed(threadId, meta.header.o))) return undefined
      return loadTuple(this.reader, threadId, ns, meta, epochs, reads, holders)
    }
    // One listing names the newest checkpoints' records (pending writes included);
    // the newest one's record and writes are then read together. The record of the
    // newest checkpoint this saver knows of is read beside the listing: when the
    // listing confirms it, the record is there (through `holders`, read once).
    const namespace = this.layout.checkpointsPrefix(threadId, ns)
    const guess = this.newest.get(namespace)
    if (guess !== undefined) {
      // Awaited, with its error, if the listing names it; a wrong guess is dropped.
      holders.read(this.layout.checkpoint(threadId, ns, guess).meta).catch(() => {})
    }
    for await (const page of checkpointsNewestFirst(this.reader, threadId, ns, 16)) {
      for (const listed of page) {
        if (!listed.hasMeta) continue
        const reads = startTupleReads(this.reader, threadId, ns, listed.id, epochs, listed)
        const meta = await holders.read(listed.keys.meta)
        if (meta === null || !(await epochs.committed(threadId, meta.header.o))) continue
        const tuple = await loadTuple(this.reader, threadId, ns, meta, epochs, reads, holders)
        if (tuple !== undefined) {
          this.newest.set(namespace, listed.id)
          return tuple
        }
      }
    }
    return undefined
  }

  /**
   * Newest first per namespace. `filter` is matched against each candidate's
   * metadata record (small, stored apart from the body); bodies, channel
   * values and writes are read only for the checkpoints yielded.
   */
  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return listCheckpoints(this.reader, config, options)
  }

  async put(
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    newVersions: ChannelVersions,
  ): Promise<RunnableConfig> {
    const threadId = required(config, 'thread_id', 'put')
    const ns = namespaceOf(config)
    const parentId = getCheckpointId(config) || null
    const built = await buildCheckpointRecord(
      this.serde,
      this.layout,
      { threadId, ns, parentId },
      checkpoint,
      metadata,
      newVersions,
      await parentSources(this.reader, threadId, ns, parentId),
    )
    const context = { threadId, checkpointNs: ns, checkpointId: built.id }
    assertFits(this.backend, [built.record(this.ownership && WIDEST_STAMP)], context)
    // One record holds the metadata, the body and the new channel values: the
    // checkpoint is visible whole or not at all, in one write (in ownership
    // mode fenced by the thread's lease on a crossKeyFence backend, otherwise
    // then committed by the fenced head write).
    await this.commitWrite(threadId, 1, async (stamp, fence) => {
      const record = built.record(stamp)
      await this.backend.put(record.key, record.value, fence === undefined ? {} : { fence })
      return [record.key]
    })
    this.reader.sources.set(this.layout.checkpoint(threadId, ns, built.id).meta, built.sources)
    this.newest.set(this.layout.checkpointsPrefix(threadId, ns), built.id)
    if (this.keepLast !== undefined)
      await this.prune(threadId, { keepLast: this.keepLast, checkpointNs: ns })
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: built.id } }
  }

  async putWrites(
    config: RunnableConfig,
    writes: PendingWrite[],
    taskId: string,
    taskPath?: string,
  ): Promise<void> {
    const threadId = required(config, 'thread_id', 'putWrites')
    const checkpointId = required(config, 'checkpoint_id', 'putWrites')
    const ns = namespaceOf(config)
    const build = await buildWriteRecords(
      this.serde,
      this.layout,
      { threadId, ns, checkpointId },
      writes,
      taskId,
      taskPath,
    )
    const widest = build(this.ownership && WIDEST_STAMP)
    assertFits(this.backend, widest, {
      threadId,
      checkpointNs: ns,
      checkpointId,
      taskId,
    })
    await this.commitWrite(threadId, widest.length, async (stamp, fence) => {
      const fenced = fence === undefined ? {} : { fence }
      const written = await mapLimited(
        build(stamp),
        this.concurrency,
        async ({ idx, key, value }) => {
          if (idx < 0) {
            await this.backend.put(key, value, fenced)
            return key
          }
          try {
            // A regular write is kept from its first attempt (LangGraph's INSERT OR IGNORE).
            await this.backend.put(key, value, { ...fenced, ifNoneMatch: '*' })
            return key
          } catch (error) {
            if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
            // Kept from an earlier call: not this call's to remove if its commit is refused.
            return undefined
          }
        },
      )
      return written.filter((key): key is string => key !== undefined)
    })
  }

  /**
   * Without ownership, just `write`. With it: take or renew the thread, write
   * the stamped records, then commit them with the fenced head write; a
   * refused commit removes what it wrote (best effort: the records are
   * invisible anyway) and rethrows `LEASE_LOST`. One record on a backend that
   * claims `crossKeyFence` is written fenced by the thread's lease instead, in
   * one write. Several records keep the head commit: fenced one by one, a
   * writer that lost the thread halfway would leave part of a task's writes
   * visible, and LangGraph takes a task with writes for done.
   */
  private async commitWrite(
    threadId: string,
    records: number,
    write: (stamp: OwnerStamp | undefined, fence: Lease | undefined) => Promise<string[]>,
  ): Promise<void> {
    const ownership = this.ownership
    if (ownership === undefined) {
      await write(undefined, undefined)
      return
    }
    if (records === 1 && this.backend.capabilities.crossKeyFence === true) {
      await ownership.serialize(threadId, () => ownership.writeFenced(threadId, write))
      return
    }
    await ownership.serialize(threadId, async () => {
      const stamp = await ownership.begin(threadId)
      const written = await write(stamp, undefined)
      try {
        await ownership.commit(threadId, stamp)
      } catch (error) {
        if (isAgentStateError(error, 'LEASE_LOST')) {
          await Promise.allSettled(written.map((key) => this.backend.delete(key)))
        }
        throw error
      }
    })
  }

  /**
   * Removes every record of the thread: checkpoints, channel values, pending
   * writes and the ownership head. Refused with `LEASE_HELD` (nothing
   * removed) while another writer owns the thread.
   */
  async deleteThread(threadId: string): Promise<void> {
    // After this saver's own in-flight writes of the thread, not in the middle of one.
    if (this.ownership !== undefined) {
      return this.ownership.serialize(threadId, () => this.removeThread(threadId))
    }
    return this.removeThread(threadId)
  }

  private async removeThread(threadId: string): Promise<void> {
    const ownerKey = this.layout.owner(threadId)
    const lease = this.ownership?.leaseOf(threadId)
    try {
      await this.backend.delete(ownerKey, lease === undefined ? {} : { lease })
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_HELD')) throw error
      throw new AgentStateError(
        'LEASE_HELD',
        `LangGraph thread ${quoteForMessage(threadId)} is owned by another writer; it was not deleted`,
        { context: { threadId, holder: error.context.holder ?? null }, cause: error },
      )
    }
    const keys = await listKeys(this.backend, this.layout.thread(threadId))
    await mapLimited(keys, this.concurrency, (key) => this.backend.delete(key))
    this.reader.sources.forget(this.layout.thread(threadId))
    this.newest.forget(this.layout.thread(threadId))
    if (this.ownership !== undefined) await this.ownership.release(threadId).catch(() => false)
  }

  /**
   * Retention: keeps the thread's latest checkpoint and its `keepLast - 1`
   * nearest ancestors per namespace (or in `checkpointNs` only) and removes
   * every other checkpoint with its pending writes, plus channel values that
   * only removed checkpoints referenced. What is kept reads exactly as before.
   */
  async prune(
    threadId: string,
    options: { readonly keepLast: number; readonly checkpointNs?: string },
  ): Promise<PruneResult> {
    if (!Number.isSafeInteger(options.keepLast) || options.keepLast < 1) {
      throw new AgentStateError('INVALID_ARGUMENT', 'keepLast must be an integer >= 1')
    }
    const threadPrefix = this.layout.thread(threadId)
    const namespaces =
      options.checkpointNs !== undefined
        ? [options.checkpointNs]
        : (await listChildren(this.backend, threadPrefix)).flatMap((prefix) => {
            const ns = this.layout.namespaceOf(threadPrefix, prefix)
            return ns === undefined ? [] : [ns]
          })
    const total = { checkpoints: 0, writes: 0, blobs: 0 }
    for (const ns of namespaces) {
      const result = await pruneNamespace(this.reader, threadId, ns, options.keepLast)
      total.checkpoints += result.checkpoints
      total.writes += result.writes
      total.blobs += result.blobs
    }
    return total
  }

  /** Ownership mode: gives the thread up so another writer can take it at once. Resolves whether it was held. */
  async releaseThread(threadId: string): Promise<boolean> {
    return this.ownership === undefined ? false : this.ownership.release(threadId)
  }
}

/**
 * Creates a LangGraph checkpoint saver over `options.backend`.
 *
 * @example
 * ```ts
 * const checkpointer = createCheckpointSaver({ backend: await openBackend('sqlite:./state.db') })
 * const graph = workflow.compile({ checkpointer })
 * ```
 */
export function createCheckpointSaver(options: CheckpointSaverOptions): AgentStateSaver {
  return new AgentStateSaver(parseOptions(checkpointSaverOptionsSchema, options, 'LangGraph saver'))
}
