import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Backend, getManyByGets } from '@agent-state/core'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import type { RunnableConfig } from '@langchain/core/runnables'
import { type Checkpoint, emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as Saver from '../src/index.js'
import { countingBackend } from './counting-backend.js'
import { type AroundCall, putChain, wrapCalls } from './helpers.js'

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

/**
 * The memory backend with a native `getMany` (core's generic one, over the memory backend
 * itself, so a counting wrapper counts the `getMany` and not the `get`s inside it).
 */
function memoryWithGetMany(): Backend {
  // A store of its own: the owned runs of other tests hold thread "t" in the shared one.
  const memory = createMemoryBackend({ store: createMemoryStore() })
  return Object.assign(memory, {
    getMany: (keys: readonly string[]) => getManyByGets(memory, keys),
  })
}

/** `backend` without its `crossKeyFence` claim (and so without the fence, for the saver). */
function withoutCrossKeyFence(backend: Backend): Backend {
  const { crossKeyFence: _claim, ...capabilities } = backend.capabilities
  return Object.assign(backend, { capabilities })
}

/**
 * The calls of one put, getTuple and list (limit 10) after 20 puts, with and without
 * ownership, on a backend without a native `getMany` or (`native`) with one, and with
 * the memory backend's `crossKeyFence` claim or (`fence: false`) without it.
 */
async function callsPerOperation(
  saver: typeof Saver,
  owned: boolean,
  native = false,
  fence = true,
) {
  // A store of its own per run: an owned run holds thread "t" for a minute.
  const memory = native ? memoryWithGetMany() : createMemoryBackend({ store: createMemoryStore() })
  const counted = countingBackend(fence ? memory : withoutCrossKeyFence(memory))
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
  const backend = wrapCalls(memory, {
    list: async (_args, call) => {
      inFlight++
      most = Math.max(most, inFlight)
      try {
        return await call()
      } finally {
        inFlight--
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
  vi.doUnmock('../src/thread-ownership.js')
  vi.doUnmock('../src/thread-scan.js')
  vi.doUnmock('../src/checkpoint-record.js')
  vi.doUnmock('../src/list-ahead.js')
  vi.doUnmock('../src/tuple-reader.js')
  vi.doUnmock('../src/read-ahead.js')
  vi.doUnmock('../src/newest-checkpoints.js')
  vi.resetModules()
})

describe('backend calls per saver operation', () => {
  it('put is one write (owned without crossKeyFence: and the fenced commit); getTuple and list read one record per checkpoint, from one listing', async () => {
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
    // Ownership on a backend that claims crossKeyFence: the record write is fenced by the
    // thread's lease, still one write. The owner's reads need the head's epochs, which it
    // wrote itself under a lease that is still live: no read of the head.
    expect(await callsPerOperation(saver, true)).toEqual({
      put: { put: 1 },
      getTuple: { list: 1, get: 1 },
      list: { list: 2, get: 10 },
      getTupleWith40Writes: { list: 2, get: 41 },
    })
    // Without the claim, ownership adds the head's fenced commit to put.
    expect(await callsPerOperation(saver, true, false, false)).toEqual({
      put: { put: 2 },
      getTuple: { list: 1, get: 1 },
      list: { list: 2, get: 10 },
      getTupleWith40Writes: { list: 2, get: 41 },
    })
  })

  it("with a native getMany, list reads its 10 records in one getMany, and getTuple a checkpoint's 40 pending writes in another", async () => {
    const saver = await import('../src/index.js')
    for (const owned of [false, true]) {
      expect(await callsPerOperation(saver, owned, true)).toEqual({
        put: { put: 1 },
        getTuple: { list: 1, get: 1 },
        list: { list: 2, getMany: 1 },
        getTupleWith40Writes: { list: 2, get: 1, getMany: 1 },
      })
    }
  })

  it('mutant: without the prefetch of the first window, list reads its records one by one', async () => {
    vi.resetModules()
    vi.doMock('../src/tuple-reader.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/tuple-reader.js')>()
      class OneByOne extends original.HolderReads {
        override prefetch(): void {}
      }
      return { ...original, HolderReads: OneByOne }
    })
    const saver = await import('../src/index.js')
    expect((await callsPerOperation(saver, false, true)).list).toEqual({ list: 2, get: 10 })
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

/**
 * getTuple of a thread this saver wrote last: whether its record was read while the listing
 * was in flight (not after it), then what getTuple returns and costs once another saver
 * wrote a newer checkpoint (the guess is wrong: the listing decides).
 */
async function getTupleBesideListing(saver: typeof Saver) {
  const counted = countingBackend(createMemoryBackend({}))
  const inFlight = { list: 0, get: 0 }
  let overlapped = false
  const track =
    (kind: 'list' | 'get'): AroundCall =>
    async (_args, call) => {
      inFlight[kind]++
      if (inFlight[kind === 'list' ? 'get' : 'list'] > 0) overlapped = true
      try {
        return await call()
      } finally {
        inFlight[kind]--
      }
    }
  const backend = wrapCalls(counted.backend, { list: track('list'), get: track('get') })
  const thread = `guess-${randomUUID()}`
  const checkpointer = saver.createCheckpointSaver({ backend })
  await putChain(checkpointer, thread, 3)
  counted.reset()
  await checkpointer.getTuple({ configurable: { thread_id: thread } })
  const own = { overlapped, calls: counted.calls() }
  const [newer] = await putChain(saver.createCheckpointSaver({ backend }), thread, 1, {
    from: { configurable: { thread_id: thread, checkpoint_ns: '' } },
  })
  counted.reset()
  const read = await checkpointer.getTuple({ configurable: { thread_id: thread } })
  return {
    own,
    newerRead: read?.config.configurable?.checkpoint_id === newer?.configurable?.checkpoint_id,
    newerCalls: counted.calls(),
  }
}

describe('getTuple of a namespace this saver wrote', () => {
  it('reads the newest record it knows of beside the listing; a newer one found by the listing wins', async () => {
    expect(await getTupleBesideListing(await import('../src/index.js'))).toEqual({
      // The listing, the record, its one pending write (named by the listing) and the
      // record holding the `constant` value it inherits (the first checkpoint's).
      own: { overlapped: true, calls: { list: 1, get: 3 } },
      newerRead: true,
      // The same, and the guessed record (wasted).
      newerCalls: { list: 1, get: 4 },
    })
  })

  it('mutant: a saver that remembers no newest checkpoint reads the record after the listing', async () => {
    vi.resetModules()
    vi.doMock('../src/newest-checkpoints.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/newest-checkpoints.js')>()
      class Forgetful extends original.NewestCheckpoints {
        override get(): undefined {
          return undefined
        }
      }
      return { NewestCheckpoints: Forgetful }
    })
    const { own } = await getTupleBesideListing(await import('../src/index.js'))
    expect(own.overlapped).toBe(false)
  })
})

describe('list with a limit', () => {
  it('mutant: a read-ahead window that ignores the limit reads records the limit excludes', async () => {
    vi.resetModules()
    vi.doMock('../src/read-ahead.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/read-ahead.js')>()
      return {
        ...original,
        readAhead: <T, R>(
          items: readonly T[],
          _window: () => number,
          start: (item: T) => Promise<R>,
        ) => original.readAhead(items, () => 16, start),
      }
    })
    const calls = await callsPerOperation(await import('../src/index.js'), false)
    // 16 ahead of the consumer, and one more per tuple it takes: every record of the listed page.
    expect(calls.list).toEqual({ list: 2, get: 21 })
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

/**
 * An owner whose lease expired while idle: the backend calls of its getTuple then (its own
 * checkpoint, one pending write), and, after another saver took the thread and wrote a
 * checkpoint, whether its getTuple returns that checkpoint and what that read cost.
 */
async function readAfterTakeover(saver: typeof Saver) {
  const memory = createMemoryBackend({})
  const counted = countingBackend(memory)
  const thread = `takeover-${randomUUID()}`
  const a = saver.createCheckpointSaver({
    backend: counted.backend,
    ownership: { holder: 'a', ttlMs: 1000 },
  })
  const b = saver.createCheckpointSaver({
    backend: memory,
    ownership: { holder: 'b', ttlMs: 30_000 },
  })
  const [first] = await putChain(a, thread, 1)
  await sleep(1200) // a's lease expired (memory leases run on this process's clock)
  counted.reset()
  await a.getTuple({ configurable: { thread_id: thread } })
  const ownRead = counted.calls()
  const [taken] = await putChain(b, thread, 1, { from: first as never })
  counted.reset()
  const read = await a.getTuple({ configurable: { thread_id: thread } })
  return {
    ownRead,
    seesTakeover: read?.config.configurable?.checkpoint_id === taken?.configurable?.checkpoint_id,
    takeoverRead: counted.calls(),
  }
}

describe("an owner's reads judge its own records by the epochs it wrote, others' by the head", () => {
  it('after its lease expired it reads no head for its own checkpoint, and reads the head for the checkpoint of the writer that took over', async () => {
    expect(await readAfterTakeover(await import('../src/index.js'))).toEqual({
      // The listing, the record and its pending write: no head.
      ownRead: { list: 1, get: 2 },
      seesTakeover: true,
      // b's record, its pending write, the record holding the value it inherits from a's
      // checkpoint, and the head: b's stamp has a token a's epochs do not know.
      takeoverRead: { list: 1, get: 4 },
    })
  })

  it('mutant: reading the head once the lease may have expired (the code before) costs a read per call', async () => {
    vi.doMock('../src/thread-ownership.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/thread-ownership.js')>()
      class HalfTtl extends original.ThreadOwnership {
        override knownEpochs(threadId: string) {
          const state = (this as unknown as { owned: Map<string, never> }).owned.get(threadId)
          const live = state !== undefined && (this as unknown as Live).surelyLive(state)
          return live ? super.knownEpochs(threadId) : undefined
        }
      }
      return { ...original, ThreadOwnership: HalfTtl }
    })
    const { ownRead, seesTakeover } = await readAfterTakeover(await import('../src/index.js'))
    expect(ownRead).toEqual({ list: 1, get: 3 })
    expect(seesTakeover).toBe(true)
  })

  it('mutant: judging by its own epochs alone, it misses the checkpoint of the writer that took over', async () => {
    vi.doMock('../src/tuple-reader.js', async (importOriginal) => {
      const original = await importOriginal<typeof import('../src/tuple-reader.js')>()
      const { isCommitted } = await import('../src/thread-ownership.js')
      class OwnOnly extends original.EpochCache {
        override async committed(threadId: string, stamp: [number, number] | undefined) {
          const known = (this as unknown as Known).known(threadId)
          if (stamp === undefined || known === undefined) return super.committed(threadId, stamp)
          return isCommitted(stamp, known)
        }
      }
      return { ...original, EpochCache: OwnOnly }
    })
    expect((await readAfterTakeover(await import('../src/index.js'))).seesTakeover).toBe(false)
  })
})

/** The private members the mutants above reach. */
interface Live {
  surelyLive(state: never): boolean
}
interface Known {
  known(threadId: string): Readonly<Record<string, number>> | undefined
}
