import { AgentStateError, mapLimited } from '@agent-state/core'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  type CheckpointListOptions,
  type CheckpointTuple,
  getCheckpointId,
} from '@langchain/langgraph-checkpoint'
import type { StoredMeta } from './checkpoint-record.js'
import { ahead } from './list-ahead.js'
import {
  checkpointsNewestFirst,
  type ListedCheckpoint,
  listChildren,
  metadataMatches,
} from './thread-scan.js'
import {
  EpochCache,
  HolderReads,
  loadTuple,
  type ReaderContext,
  readMeta,
  startTupleReads,
  type TupleReads,
} from './tuple-reader.js'

/** A required string id of `config.configurable`; `INVALID_ARGUMENT` when absent. */
export function required(
  config: RunnableConfig,
  field: 'thread_id' | 'checkpoint_id',
  call: string,
): string {
  const value = config.configurable?.[field]
  if (typeof value !== 'string' || value === '') {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      `${call} needs config.configurable.${field} (a non-empty string)`,
      { context: { field } },
    )
  }
  return value
}

/** `config.configurable.checkpoint_ns`, default `""`. */
export function namespaceOf(config: RunnableConfig): string {
  const ns = config.configurable?.checkpoint_ns ?? ''
  if (typeof ns !== 'string') {
    throw new AgentStateError(
      'INVALID_ARGUMENT',
      'config.configurable.checkpoint_ns must be a string',
    )
  }
  return ns
}

/**
 * `list` of the saver: threads and namespaces in key order, checkpoints
 * newest first in each. `before` and `filter` are applied to the metadata
 * records; a body is read only for a checkpoint that is yielded.
 */
export async function* listCheckpoints(
  ctx: ReaderContext,
  config: RunnableConfig,
  options: CheckpointListOptions | undefined,
): AsyncGenerator<CheckpointTuple> {
  const { before, filter } = options ?? {}
  let remaining = options?.limit
  const beforeId = before === undefined ? '' : getCheckpointId(before)
  const onlyId = getCheckpointId(config)
  const threadIds =
    config.configurable?.thread_id !== undefined
      ? [required(config, 'thread_id', 'list')]
      : (await listChildren(ctx.backend, ctx.layout.threadsPrefix())).map((prefix) =>
          ctx.layout.threadIdOf(prefix),
        )
  const filtering = filter !== undefined && Object.keys(filter).length > 0
  const epochs = new EpochCache(ctx.backend, ctx.layout)
  const holders = new HolderReads(ctx.backend)
  for (const threadId of threadIds) {
    if (ctx.owned) epochs.prefetch(threadId)
    const threadPrefix = ctx.layout.thread(threadId)
    const pagesOf = (ns: string) =>
      checkpointsNewestFirst(ctx, threadId, ns, 2 * Math.min((remaining ?? 15) + 1, 16))
    // The root graph's namespace ("") sorts first and nearly every thread has it: its
    // first page is listed beside the namespaces, not after them (dropped if absent).
    const rootPages =
      config.configurable?.checkpoint_ns === undefined && onlyId === ''
        ? ahead(pagesOf(''))
        : undefined
    const namespaces =
      config.configurable?.checkpoint_ns !== undefined
        ? [namespaceOf(config)]
        : (await listChildren(ctx.backend, threadPrefix)).flatMap((prefix) => {
            const ns = ctx.layout.namespaceOf(threadPrefix, prefix)
            return ns === undefined ? [] : [ns]
          })
    if (rootPages !== undefined && !namespaces.includes('')) await rootPages.drop()
    for (const ns of namespaces) {
      const pages: AsyncIterable<ListedCheckpoint[]> | ListedCheckpoint[][] =
        onlyId !== ''
          ? [[onlyCheckpoint(ctx, threadId, ns, onlyId)]]
          : ns === '' && rootPages !== undefined
            ? rootPages.pages
            : pagesOf(ns)
      for await (const page of pages) {
        const listedCandidates = page.filter(
          (listed) => listed.hasMeta && (beforeId === '' || listed.id < beforeId),
        )
        // Without a filter, a limit needs `remaining` records (more only if some are
        // uncommitted): each record holds a body, so read no more than that at once.
        for (let start = 0; start < listedCandidates.length; ) {
          const size =
            remaining !== undefined && !filtering ? Math.max(remaining, 1) : listedCandidates.length
          const candidates = listedCandidates.slice(start, start + size)
          start += size
          // Without a filter, the first `remaining` candidates are the tuples asked
          // for (unless uncommitted): their body and writes are read beside their
          // metadata, not after it. With a filter, only for the metadata that matches.
          const speculate = remaining !== undefined && !filtering
          const reads = candidates.map((listed, i): TupleReads | undefined =>
            speculate && i < (remaining ?? 0)
              ? startTupleReads(ctx, threadId, ns, listed.id, epochs, listed)
              : undefined,
          )
          const metas = await mapLimited(candidates, ctx.concurrency, (listed) =>
            readMeta(ctx.backend, listed.keys.meta),
          )
          const chosen: Array<{
            meta: StoredMeta
            listed: ListedCheckpoint
            reads: TupleReads | undefined
          }> = []
          for (const [i, meta] of metas.entries()) {
            if (meta === null) continue
            holders.seed((candidates[i] as ListedCheckpoint).keys.meta, meta)
            if (!(await epochs.committed(threadId, meta.header.o))) continue
            if (filtering && filter !== undefined) {
              const metadata = await ctx.serde.loadsTyped(meta.header.mt, meta.payload)
              if (!metadataMatches(metadata, filter)) continue
            }
            const listed = candidates[i] as ListedCheckpoint
            chosen.push({
              meta,
              listed,
              reads:
                reads[i] ??
                (remaining === undefined
                  ? undefined
                  : startTupleReads(ctx, threadId, ns, listed.id, epochs, listed)),
            })
          }
          // With a limit the caller asked for these tuples, so they load together;
          // without one, one at a time, so a consumer that stops early read no extra body.
          const load = ({ meta, listed, reads }: (typeof chosen)[number]) =>
            loadTuple(
              ctx,
              threadId,
              ns,
              meta,
              epochs,
              reads ?? startTupleReads(ctx, threadId, ns, listed.id, epochs, listed),
              holders,
            )
          const batch =
            remaining === undefined
              ? chosen.map((one) => () => load(one))
              : (await Promise.all(chosen.slice(0, remaining).map(load))).map(
                  (tuple) => () => tuple,
                )
          for (const next of batch) {
            if (remaining !== undefined && remaining <= 0) return
            const tuple = await next()
            if (tuple === undefined) continue
            if (remaining !== undefined) remaining -= 1
            yield tuple
          }
          if (remaining !== undefined && remaining <= 0) return
        }
      }
    }
  }
}

/** The checkpoint `checkpointId` as a listing would name it (its pending writes listed when loaded). */
function onlyCheckpoint(
  ctx: ReaderContext,
  threadId: string,
  ns: string,
  checkpointId: string,
): ListedCheckpoint {
  return {
    id: checkpointId,
    keys: ctx.layout.checkpoint(threadId, ns, checkpointId),
    hasMeta: true,
    // Unknown without a listing: a format-1 body is read after the record says so.
    hasBody: false,
  }
}
