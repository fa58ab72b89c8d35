import { randomUUID } from 'node:crypto'
import { createMemoryBackend } from '@agent-state/memory'
import type { RunnableConfig } from '@langchain/core/runnables'
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

/** The most `list` calls in flight at once during `list` of a thread (limit 10) without a namespace. */
async function listingsInFlight(saver: typeof Saver): Promise<number> {
  const memory = createMemoryBackend({})
  let inFlight = 0
  let most = 0
  const backend = new Proxy(memory, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (property !== 'list') return typeof value === 'function' ? value.bind(target) : value
      return async (...args: Parameters<typeof memory.list>) => {
        inFlight++
        most = Math.max(most, inFlight)
        try {
          return await target.list(...args)
        } finally {
          inFlight--
        }
      }
    },
  })
  const checkpointer = saver.createCheckpointSaver({ backend })
  // Memory backends of one process share their namespace: a thread of its own.
  const thread = `in-flight-${randomUUID()}`
  let config: RunnableConfig = { configurable: { thread_id: thread, checkpoint_ns: '' } }
  for (let step = 1; step <= 3; step++) {
    const metadata = { source: 'loop' as const, step, parents: {} }
    config = await checkpointer.put(config, checkpointOf(step), metadata, { messages: step })
  }
  most = 0
  let listed = 0
  for await (const _ of checkpointer.list({ configurable: { thread_id: thread } }, { limit: 10 }))
    listed++
  expect(listed).toBe(3)
  return most
}

afterEach(() => {
  vi.doUnmock('../src/thread-scan.js')
  vi.doUnmock('../src/checkpoint-record.js')
  vi.doUnmock('../src/list-ahead.js')
  vi.resetModules()
})

describe('backend calls per saver operation', () => {
  it('put is one write (owned: and the fenced commit); getTuple and list read one record per checkpoint, from one listing', async () => {
    const saver = await import('../src/index.js')
    expect(await callsPerOperation(saver, false)).toEqual({
      // One record: metadata, body and the new channel value; the parent's channel
      // sources are remembered from the previous put, so nothing is read.
      put: { put: 1 },
      // One listing of the newest records, then the newest checkpoint's record.
      getTuple: { list: 1, get: 1 },
      // The namespaces, one listing of the checkpoints' records (their pending writes
      // included), then the record of each of the 10 (and no more).
      list: { list: 2, get: 10 },
      // The first page (16 keys) ends inside the checkpoint's writes; the next takes 1000.
      getTupleWith40Writes: { list: 2, get: 41 },
    })
    // Ownership adds the head's fenced commit to put, and the head's epochs to each read.
    expect(await callsPerOperation(saver, true)).toEqual({
      put: { put: 2 },
      getTuple: { list: 1, get: 2 },
      list: { list: 2, get: 11 },
      getTupleWith40Writes: { list: 2, get: 42 },
    })
  })

  it('a put on a parent this saver has not seen reads the parent record once; one it loaded, not at all', async () => {
    const saver = await import('../src/index.js')
    const counted = countingBackend(createMemoryBackend({}))
    const config = { configurable: { thread_id: `unseen-${randomUUID()}`, checkpoint_ns: '' } }
    const metadata = { source: 'loop' as const, step: 1, parents: {} }
    const first = await saver
      .createCheckpointSaver({ backend: counted.backend })
      .put(config, checkpointOf(1), metadata, { messages: 1 })
    const other = saver.createCheckpointSaver({ backend: counted.backend })
    counted.reset()
    // The parent's record says where `messages` lives: the child refers to it, not a copy.
    const second = await other.put(first, { ...checkpointOf(1), id: uuid6(-1) }, metadata, {})
    expect(counted.calls()).toEqual({ get: 1, put: 1 })
    counted.reset()
    expect((await other.getTuple(second))?.checkpoint.channel_values).toEqual({
      messages: 'x'.repeat(1024),
    })
    // Its record, then the holder's record for the inherited value.
    expect(counted.calls()).toEqual({ get: 2, list: 1 })
    const third = saver.createCheckpointSaver({ backend: counted.backend })
    await third.getTuple(second)
    counted.reset()
    await third.put(second, { ...checkpointOf(1), id: uuid6(-1) }, metadata, {})
    expect(counted.calls()).toEqual({ put: 1 })
  })

  it("mutant: a saver that forgets its checkpoints' channel sources reads the parent on every put", async () => {
    vi.resetModules()
    vi.doMock('../src/checkpoint-record.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/checkpoint-record.js')>()
      class ForgetfulCache extends original.SourceCache {
        override get(): undefined {
          return undefined
        }
      }
      return { ...original, SourceCache: ForgetfulCache }
    })
    const saver = await import('../src/index.js')
    expect((await callsPerOperation(saver, false)).put).toEqual({ get: 1, put: 1 })
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

describe('list without a namespace', () => {
  it("lists the root namespace's checkpoints beside the namespaces, not after them", async () => {
    expect(await listingsInFlight(await import('../src/index.js'))).toBe(2)
  })

  it('mutant: a list that waits for the namespaces lists one thing at a time', async () => {
    vi.resetModules()
    vi.doMock('../src/list-ahead.js', () => ({
      ahead: <T>(pages: AsyncGenerator<T>) => ({
        pages,
        drop: async () => {
          await pages.return(undefined)
        },
      }),
    }))
    expect(await listingsInFlight(await import('../src/index.js'))).toBe(1)
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
