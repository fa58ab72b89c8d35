import { AgentStateError } from '@agent-state/core'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  type CheckpointListOptions,
  type CheckpointTuple,
  getCheckpointId,
} from '@langchain/langgraph-checkpoint'
import { listChildren, metadataMatches, metaPagesNewestFirst } from './thread-scan.js'
import {
  EpochCache,
  loadTuple,
  type ReaderContext,
  readMeta,
  type StoredMeta,
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
  const epochs = new EpochCache(ctx.backend, ctx.layout)
  for (const threadId of threadIds) {
    const threadPrefix = ctx.layout.thread(threadId)
    const namespaces =
      config.configurable?.checkpoint_ns !== undefined
        ? [namespaceOf(config)]
        : (await listChildren(ctx.backend, threadPrefix)).flatMap((prefix) => {
            const ns = ctx.layout.namespaceOf(threadPrefix, prefix)
            return ns === undefined ? [] : [ns]
          })
    for (const ns of namespaces) {
      const pages =
        onlyId !== ''
          ? [[await readMeta(ctx.backend, ctx.layout.checkpoint(threadId, ns, onlyId).meta)]]
          : metaPagesNewestFirst(ctx, threadId, ns, Math.min((remaining ?? 15) + 1, 16))
      for await (const page of pages) {
        const chosen: StoredMeta[] = []
        for (const meta of page) {
          if (meta === null) continue
          if (beforeId !== '' && !(meta.header.id < beforeId)) continue
          if (!(await epochs.committed(threadId, meta.header.o))) continue
          if (filter !== undefined && Object.keys(filter).length > 0) {
            const metadata = await ctx.serde.loadsTyped(meta.header.mt, meta.payload)
            if (!metadataMatches(metadata, filter)) continue
          }
          chosen.push(meta)
        }
        // With a limit the caller asked for these tuples, so they load together;
        // without one, one at a time, so a consumer that stops early read no extra body.
        const load = (meta: StoredMeta) => loadTuple(ctx, threadId, ns, meta, epochs)
        const batch =
          remaining === undefined
            ? chosen.map((meta) => () => load(meta))
            : (await Promise.all(chosen.slice(0, remaining).map(load))).map((tuple) => () => tuple)
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
