import { createMemoryBackend } from '@agent-state/memory'
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as Saver from '../src/index.js'
import { countingBackend } from './counting-backend.js'

/**
 * Backend calls per saver operation (a count, which load does not change),
 * on the benchmark's shape (`bench:postgres`'s lg-put / lg-getTuple /
 * lg-list): a thread of 20 checkpoints, one 1 KiB channel each, no pending
 * writes. Every backend pays these calls; their latency is each backend's own.
 */

const checkpointOf = (step: number): Checkpoint => ({
  ...emptyCheckpoint(),
  id: uuid6(-1),
  channel_values: { messages: 'x'.repeat(1024) },
  channel_versions: { messages: step },
})

/** The calls of one put, getTuple and list (limit 10) after 20 puts, with and without ownership. */
async function callsPerOperation(saver: typeof Saver, owned: boolean) {
  const counted = countingBackend(createMemoryBackend({}))
  const take = () => {
    const calls = counted.calls()
    counted.reset()
    return calls
  }
  const checkpointer = saver.createCheckpointSaver({
    backend: counted.backend,
    ...(owned ? { ownership: { holder: 'bench', ttlMs: 60_000 } } : {}),
  })
  let parent: string | undefined
  const put = async (step: number) => {
    const config = {
      configurable: {
        thread_id: 't',
        checkpoint_ns: '',
        ...(parent === undefined ? {} : { checkpoint_id: parent }),
      },
    }
    const metadata = { source: 'loop' as const, step, parents: {} }
    const saved = await checkpointer.put(config, checkpointOf(step), metadata, { messages: step })
    parent = saved.configurable?.checkpoint_id as string
  }
  for (let step = 1; step <= 20; step++) await put(step)
  take()
  await put(21)
  const put_ = take()
  expect((await checkpointer.getTuple({ configurable: { thread_id: 't' } }))?.config).toEqual({
    configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: parent },
  })
  const getTuple = take()
  let listed = 0
  for await (const _ of checkpointer.list({ configurable: { thread_id: 't' } }, { limit: 10 }))
    listed++
  expect(listed).toBe(10)
  const list = take()
  // 40 pending writes on the newest checkpoint: more records than the first listing page.
  const writes = Array.from({ length: 40 }, (_, i) => [`channel-${i}`, i] as [string, unknown])
  await checkpointer.putWrites(
    { configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: parent } },
    writes,
    'task',
  )
  take()
  const tuple = await checkpointer.getTuple({ configurable: { thread_id: 't' } })
  expect(tuple?.pendingWrites).toHaveLength(40)
  return { put: put_, getTuple, list, getTupleWith40Writes: take() }
}

afterEach(() => {
  vi.doUnmock('../src/thread-scan.js')
  vi.resetModules()
})

describe('backend calls per saver operation', () => {
  it('put writes body, channel value and metadata; getTuple and list read each checkpoint once, from one listing', async () => {
    const saver = await import('../src/index.js')
    expect(await callsPerOperation(saver, false)).toEqual({
      put: { put: 3 },
      // One listing of the newest records, then metadata, body and channel value.
      getTuple: { list: 1, get: 3 },
      // The namespaces, one listing of the checkpoints' records (their pending writes
      // included), then metadata, body and channel value of each of the 10.
      list: { list: 2, get: 30 },
      // The first page (16 keys) ends inside the checkpoint's writes; the next takes 1000.
      getTupleWith40Writes: { list: 2, get: 43 },
    })
    // Ownership adds the head's commit to put, and the head's epochs to each read.
    expect(await callsPerOperation(saver, true)).toEqual({
      put: { put: 4 },
      getTuple: { list: 1, get: 4 },
      list: { list: 2, get: 31 },
      getTupleWith40Writes: { list: 2, get: 44 },
    })
  })

  it('mutant: a listing that does not hand on the pending-write keys costs a listing per checkpoint', async () => {
    vi.resetModules()
    vi.doMock('../src/thread-scan.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/thread-scan.js')>()
      return {
        ...original,
        async *checkpointsNewestFirst(...args: Parameters<typeof original.checkpointsNewestFirst>) {
          for await (const page of original.checkpointsNewestFirst(...args)) {
            yield page.map((listed) => ({ ...listed, writeKeys: undefined }))
          }
        },
      }
    })
    const saver = await import('../src/index.js')
    const calls = await callsPerOperation(saver, false)
    expect(calls.getTuple.list).toBe(2)
    expect(calls.list.list).toBe(12)
  })
})

describe('a checkpoint with many pending writes', () => {
  it('mutant: later listing pages as small as the first cost a listing per 16 records', async () => {
    vi.resetModules()
    vi.doMock('../src/thread-scan.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/thread-scan.js')>()
      return {
        ...original,
        checkpointsNewestFirst: (
          ...[ctx, threadId, ns, keysPerPage]: Parameters<typeof original.checkpointsNewestFirst>
        ) => original.checkpointsNewestFirst(ctx, threadId, ns, keysPerPage, keysPerPage),
      }
    })
    const saver = await import('../src/index.js')
    const calls = await callsPerOperation(saver, false)
    expect(calls.getTupleWith40Writes.list).toBe(3)
  })
})
