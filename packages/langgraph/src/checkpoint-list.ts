import { AgentStateError } from '@agent-state/core'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  type CheckpointListOptions,
  type CheckpointTuple,
  getCheckpointId,
} from '@langchain/langgraph-checkpoint'
import { ahead } from './list-ahead.js'
import { readAhead, startedNow } from './read-ahead.js'
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
  startTupleReads,
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
 * newest first in each. The records of the listed checkpoints are read ahead
 * of the consumer, concurrently (`readAhead`: as many as a limit without a
 * filter still needs, else up to `concurrency`); `before` and `filter` are
 * applied to their metadata, and pending writes are read beside the record
 * (with a filter, only for a match, and with a limit only once it is reached).
 */
export async function* listCheckpoints(
  ctx: ReaderContext,
  config: RunnableConfig,
  options: CheckpointListOptions | undefined,
): AsyncGenerator<CheckpointTuple> {
  const { before, filter } = options ?? {}
  let remaining = options?.limit
  if (remaining !== undefined && remaining <= 0) return
  const beforeId = before === undefined ? '' : getCheckpointId(before)
  const onlyId = getCheckpointId(config)
  const threadIds =
    config.configurable?.thread_id !== undefined
      ? [required(config, 'thread_id', 'list')]
      : (await listChildren(ctx.backend, ctx.layout.threadsPrefix())).map((prefix) =>
          ctx.layout.threadIdOf(prefix),
        )
  const filtering = filter !== undefined && Object.keys(filter).length > 0
  const epochs = new EpochCache(ctx.backend, ctx.layout, ctx.knownEpochs)
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
        const candidates = page.filter(
          (listed) => listed.hasMeta && (beforeId === '' || listed.id < beforeId),
        )
        // Without a filter, a limit needs `remaining` records (more only if some are
        // uncommitted): each holds a body, so no more than that is read ahead. Otherwise
        // up to `concurrency` records are read ahead of the consumer.
        const window = () => (remaining !== undefined && !filtering ? remaining : ctx.concurrency)
        // The first window's records in one read (one statement on PostgreSQL instead of one
        // per record); the read-ahead then finds them, and reads any later one on its own.
        holders.prefetch(
          candidates.slice(0, window()).map((listed) => listed.keys.meta),
          ctx.concurrency,
        )
        const judged = readAhead(candidates, window, async (listed) => {
          // Without a filter every committed candidate is yielded: its pending writes
          // (and a format-1 body) are read beside its record, not after it.
          const reads = filtering
            ? undefined
            : startTupleReads(ctx, threadId, ns, listed.id, epochs, listed)
          // Through `holders`: a record another checkpoint's inherited value needs is read once.
          const meta = await holders.read(listed.keys.meta)
          if (meta === null || !(await epochs.committed(threadId, meta.header.o))) return undefined
          if (filtering && filter !== undefined) {
            const metadata = await ctx.serde.loadsTyped(meta.header.mt, meta.payload)
            if (!metadataMatches(metadata, filter)) return undefined
          }
          const load = () =>
            loadTuple(
              ctx,
              threadId,
              ns,
              meta,
              epochs,
              reads ?? startTupleReads(ctx, threadId, ns, listed.id, epochs, listed),
              holders,
            )
          // A match without a limit is yielded unless the consumer stops: loaded in the
          // window. With a limit, a match is loaded when reached, so none that the limit
          // excludes has its writes read.
          return reads !== undefined || remaining === undefined ? startedNow(load) : load
        })
        for await (const next of judged) {
          if (next === undefined) continue
          const tuple = await next()
          if (tuple === undefined) continue
          if (remaining !== undefined) remaining -= 1
          yield tuple
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
