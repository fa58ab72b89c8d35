import { errorCodeOf } from '@agent-state/contract'
import { createMemoryBackend } from '@agent-state/memory'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  type Checkpoint,
  type CheckpointTuple,
  emptyCheckpoint,
  JsonPlusSerializer,
  uuid6,
} from '@langchain/langgraph-checkpoint'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as Saver from '../src/index.js'
import { putFormatOne } from './fixtures/format-one-writer.js'
import { allKeys, putChain } from './helpers.js'

/**
 * Stored data of version 0.1 (format 1: metadata, body and channel values as
 * records of their own) stays readable, and the one-record checkpoints of
 * format 2 are written on top of it; prune keeps what a kept checkpoint
 * inherits from a removed record.
 */

async function collect(iterable: AsyncIterable<CheckpointTuple>): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = []
  for await (const item of iterable) out.push(item)
  return out
}

const checkpointOf = (
  id: string,
  versions: Record<string, number>,
  values: object,
): Checkpoint => ({
  ...emptyCheckpoint(),
  id,
  channel_values: { ...values },
  channel_versions: { ...versions },
})

afterEach(() => {
  vi.doUnmock('../src/checkpoint-record.js')
  vi.resetModules()
})

describe('record formats', () => {
  it('reads format-1 checkpoints, writes format-2 children that inherit their values, and prunes across both', async () => {
    const { createCheckpointSaver } = await import('../src/index.js')
    const backend = createMemoryBackend({})
    const saver = createCheckpointSaver({ backend, prefix: 'lg' })
    const serde = new JsonPlusSerializer()
    // Three checkpoints as 0.1 stored them: `counter` changes each step, `constant` once.
    const old: RunnableConfig[] = []
    let parentId: string | null = null
    for (let step = 0; step < 3; step++) {
      const config = await putFormatOne(
        backend,
        serde,
        saver.keys,
        { threadId: 't', ns: '', parentId },
        checkpointOf(
          uuid6(-3),
          { counter: step + 1, constant: 1 },
          {
            counter: `old-${step}`,
            constant: 'same',
          },
        ),
        { source: 'loop', step, parents: {} },
        step === 0 ? { counter: 1, constant: 1 } : { counter: step + 1 },
      )
      await saver.putWrites(config, [['counter', `write-${step}`]], `task-${step}`)
      old.push(config)
      parentId = config.configurable.checkpoint_id as string
    }
    const oldLatest = await saver.getTuple({ configurable: { thread_id: 't' } })
    expect(oldLatest?.config).toEqual(old[2])
    expect(oldLatest?.checkpoint.channel_values).toEqual({ counter: 'old-2', constant: 'same' })
    expect(oldLatest?.metadata).toEqual({ source: 'loop', step: 2, parents: {} })
    expect(oldLatest?.parentConfig).toEqual(old[1])
    expect(oldLatest?.pendingWrites).toEqual([['task-2', 'counter', 'write-2']])
    expect(
      (await collect(saver.list({ configurable: { thread_id: 't' } }))).map(
        (tuple) => tuple.config,
      ),
    ).toEqual([...old].reverse())

    // Two format-2 children: `constant` still comes from 0.1's channel value record.
    const children: RunnableConfig[] = []
    let parent = old[2] as RunnableConfig
    for (let step = 3; step < 5; step++) {
      parent = await saver.put(
        parent,
        checkpointOf(
          uuid6(-3),
          { counter: step + 1, constant: 1 },
          {
            counter: `new-${step}`,
            constant: 'same',
          },
        ),
        { source: 'loop', step, parents: {} },
        { counter: step + 1 },
      )
      children.push(parent)
    }
    const childKeys = saver.keys.checkpoint('t', '', children[0]?.configurable?.checkpoint_id)
    expect((await backend.get(childKeys.meta))?.value[4]).toBe(2)
    expect(await backend.head(childKeys.body)).toBeNull()
    const before = await Promise.all(children.map((config) => saver.getTuple(config)))
    expect(before.map((tuple) => tuple?.checkpoint.channel_values)).toEqual([
      { counter: 'new-3', constant: 'same' },
      { counter: 'new-4', constant: 'same' },
    ])
    expect(before[0]?.parentConfig).toEqual(old[2])

    // Prune to the two format-2 checkpoints: the format-1 records go, `constant`'s stays.
    expect(await saver.prune('t', { keepLast: 2 })).toEqual({ checkpoints: 3, writes: 3, blobs: 3 })
    expect(await Promise.all(children.map((config) => saver.getTuple(config)))).toEqual(before)
    const blobs = (await allKeys(backend, 'lg/')).filter((key) => key.includes('/v/'))
    expect(blobs).toEqual([saver.keys.blob('t', '', 'constant', 1)])
  })

  it('prune removes what a crashed 0.1 put left (body and channel value, no metadata record)', async () => {
    const { createCheckpointSaver } = await import('../src/index.js')
    const backend = createMemoryBackend({})
    const saver = createCheckpointSaver({ backend, prefix: 'lg-crashed' })
    const [kept] = await putChain(saver, 't', 1)
    const crashed = await putFormatOne(
      backend,
      new JsonPlusSerializer(),
      saver.keys,
      { threadId: 't', ns: '', parentId: null },
      checkpointOf(uuid6(-3), { counter: 7 }, { counter: 'lost' }),
      { source: 'loop', step: 9, parents: {} },
      { counter: 7 },
    )
    await backend.delete(
      saver.keys.checkpoint('t', '', crashed.configurable.checkpoint_id as string).meta,
    )
    expect(await saver.prune('t', { keepLast: 1 })).toEqual({ checkpoints: 0, writes: 0, blobs: 1 })
    const left = await allKeys(backend, 'lg-crashed/')
    expect(left.filter((key) => key.includes('/v/') || key.endsWith('/b'))).toEqual([])
    expect((await saver.getTuple(kept as RunnableConfig))?.checkpoint.channel_values).toEqual({
      counter: 'main-0',
      constant: 'same',
    })
  })

  it('a record of a format this version does not know is INCOMPATIBLE_SCHEMA, never a missing checkpoint', async () => {
    const { createCheckpointSaver } = await import('../src/index.js')
    const backend = createMemoryBackend({})
    const saver = createCheckpointSaver({ backend, prefix: 'lg-future' })
    const [config] = await putChain(saver, 't', 1)
    const key = saver.keys.checkpoint('t', '', config?.configurable?.checkpoint_id).meta
    const stored = (await backend.get(key))?.value as Uint8Array
    const future = stored.slice()
    future[4] = 3
    await backend.put(key, future)
    expect(await errorCodeOf(saver.getTuple(config as RunnableConfig))).toBe('INCOMPATIBLE_SCHEMA')
  })

  it('mutant: a prune that does not copy out inherited values loses them from kept checkpoints', async () => {
    vi.resetModules()
    vi.doMock('../src/checkpoint-record.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/checkpoint-record.js')>()
      return { ...original, spilledValues: () => [] }
    })
    const saver: typeof Saver = await import('../src/index.js')
    const checkpointer = saver.createCheckpointSaver({ backend: createMemoryBackend({}) })
    const chain = await putChain(checkpointer, 't', 4)
    await checkpointer.prune('t', { keepLast: 2 })
    // `constant` was written by the first checkpoint only: gone with its record.
    expect(
      (await checkpointer.getTuple(chain[2] as RunnableConfig))?.checkpoint.channel_values,
    ).toEqual({
      counter: 'main-2',
    })
  })
})
