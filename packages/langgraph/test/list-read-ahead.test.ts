import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { AgentStateError, type Backend, isAgentStateError } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import type { RunnableConfig } from '@langchain/core/runnables'
import type { CheckpointTuple } from '@langchain/langgraph-checkpoint'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as Saver from '../src/index.js'
import { putChain, wrapCalls } from './helpers.js'

/**
 * `list` reads the records of the checkpoints it will yield ahead of its
 * consumer (`src/read-ahead.ts`): concurrently, errors in order, nothing
 * left unhandled when the consumer stops. Each scenario runs on the memory
 * backend behind a proxy that counts or holds chosen `get`s (no timings).
 */

/** The memory backend with `get` of keys matching `hold` answered only when the test says. */
function holdingBackend(hold: (key: string) => Error | undefined) {
  const memory = createMemoryBackend({})
  const held: Array<() => void> = []
  let writesInFlight = 0
  let mostWritesInFlight = 0
  const backend = wrapCalls(memory, {
    get: async (args, call) => {
      const failure = hold(args[0] as string)
      if (failure !== undefined) {
        await new Promise<void>((resolve) => held.push(resolve))
        throw failure
      }
      const write = (args[0] as string).includes('/w/')
      if (write) writesInFlight++
      mostWritesInFlight = Math.max(mostWritesInFlight, writesInFlight)
      try {
        return await call()
      } finally {
        if (write) writesInFlight--
      }
    },
  })
  return {
    backend,
    release: () => {
      for (const resolve of held.splice(0)) resolve()
    },
    mostWritesInFlight: () => mostWritesInFlight,
  }
}

/** A thread of `length` checkpoints (one pending write each) on `backend`: its configs, oldest first. */
async function thread(saver: typeof Saver, backend: Backend, length: number) {
  const threadId = `read-ahead-${randomUUID()}`
  const writer = saver.createCheckpointSaver({ backend })
  const configs = await putChain(writer, threadId, length)
  const idOf = (config: RunnableConfig | undefined) => config?.configurable?.checkpoint_id as string
  return { threadId, writer, ids: configs.map(idOf) }
}

/** The most pending-write reads in flight at once during a `list` without a limit of 6 checkpoints. */
async function writesReadAtOnce(saver: typeof Saver): Promise<number> {
  const held = holdingBackend(() => undefined)
  const { threadId } = await thread(saver, held.backend, 6)
  const reader = saver.createCheckpointSaver({ backend: held.backend })
  let listed = 0
  for await (const _ of reader.list({ configurable: { thread_id: threadId } })) listed++
  expect(listed).toBe(6)
  return held.mostWritesInFlight()
}

/**
 * A `list` of 5 checkpoints whose second record fails late (after the others
 * were read) and whose fourth fails at once: what it yields, then the code it throws.
 */
async function failuresInOrder(saver: typeof Saver) {
  let failing: { late: string; early: string } | undefined
  const held = holdingBackend((key) =>
    key === failing?.late ? new AgentStateError('UNAVAILABLE', 'the second record') : undefined,
  )
  const { threadId, writer, ids } = await thread(saver, held.backend, 5)
  const keyOf = (id: string | undefined) => writer.keys.checkpoint(threadId, '', id as string).meta
  failing = { late: keyOf(ids[3]), early: keyOf(ids[1]) }
  const backend = wrapCalls(held.backend, {
    get: async (args, call) => {
      if (args[0] === failing?.early) throw new AgentStateError('CORRUPT', 'the fourth record')
      return call()
    },
  })
  const reader = saver.createCheckpointSaver({ backend })
  const yielded: CheckpointTuple[] = []
  const listing = (async () => {
    for await (const tuple of reader.list({ configurable: { thread_id: threadId } })) {
      yielded.push(tuple)
    }
  })()
  await sleep(50) // every other record read (or failed) meanwhile
  held.release()
  const code = await listing.then(
    () => 'none',
    (error: unknown) => (isAgentStateError(error) ? error.code : String(error)),
  )
  return { yielded: yielded.map((tuple) => tuple.checkpoint.id), code, newest: ids[4] }
}

/**
 * A consumer that takes the first of 5 checkpoints and stops, while the third
 * one's record and the second one's pending write are still being read; both
 * then fail. Returns the rejections nobody handled.
 */
async function unhandledAfterBreak(saver: typeof Saver): Promise<unknown[]> {
  let failing: { record: string; writes: string } | undefined
  const held = holdingBackend((key) =>
    key === failing?.record || key.startsWith(failing?.writes ?? '\u0000')
      ? new AgentStateError('UNAVAILABLE', 'read after the consumer stopped')
      : undefined,
  )
  const { threadId, writer, ids } = await thread(saver, held.backend, 5)
  failing = {
    record: writer.keys.checkpoint(threadId, '', ids[2] as string).meta,
    writes: writer.keys.checkpoint(threadId, '', ids[3] as string).writes,
  }
  const reader = saver.createCheckpointSaver({ backend: held.backend })
  // vitest fails a run on any unhandled rejection: its listeners step aside while this one counts.
  const listeners = process.listeners('unhandledRejection')
  process.removeAllListeners('unhandledRejection')
  const unhandled: unknown[] = []
  const count = (reason: unknown) => unhandled.push(reason)
  process.on('unhandledRejection', count)
  try {
    for await (const _ of reader.list({ configurable: { thread_id: threadId } })) break
    held.release()
    await sleep(50)
  } finally {
    process.off('unhandledRejection', count)
    for (const listener of listeners) process.on('unhandledRejection', listener)
  }
  return unhandled
}

afterEach(() => {
  vi.doUnmock('../src/read-ahead.js')
  vi.resetModules()
})

/** The saver with `src/read-ahead.ts` replaced by `mutate` of it. */
async function withReadAhead(
  mutate: (original: typeof import('../src/read-ahead.js')) => Record<string, unknown>,
): Promise<typeof Saver> {
  vi.resetModules()
  vi.doMock('../src/read-ahead.js', async (importOriginal) =>
    mutate(await importOriginal<typeof import('../src/read-ahead.js')>()),
  )
  return import('../src/index.js')
}

describe('list reads ahead of its consumer', () => {
  it("without a limit, the checkpoints' pending writes are read together, not one checkpoint at a time", async () => {
    expect(await writesReadAtOnce(await import('../src/index.js'))).toBe(6)
  })

  it('mutant: a window of one reads them one checkpoint at a time', async () => {
    const saver = await withReadAhead((original) => ({
      ...original,
      readAhead: <T, R>(
        items: readonly T[],
        _window: () => number,
        start: (item: T) => Promise<R>,
      ) => original.readAhead(items, () => 1, start),
    }))
    expect(await writesReadAtOnce(saver)).toBe(1)
  })

  it('an error surfaces when its checkpoint is reached, after the newer ones were yielded', async () => {
    const { yielded, code, newest } = await failuresInOrder(await import('../src/index.js'))
    expect(yielded).toEqual([newest])
    expect(code).toBe('UNAVAILABLE')
  })

  it('mutant: awaiting the whole window first throws the error that came first in time', async () => {
    const saver = await withReadAhead((original) => ({
      ...original,
      async *readAhead<T, R>(
        items: readonly T[],
        _window: () => number,
        start: (item: T) => Promise<R>,
      ) {
        const failures: unknown[] = []
        const started = items.map((item) =>
          start(item).catch((error: unknown) => {
            failures.push(error)
            throw error
          }),
        )
        const settled = await Promise.allSettled(started)
        if (failures.length > 0) throw failures[0]
        for (const one of settled) if (one.status === 'fulfilled') yield one.value
      },
    }))
    const { yielded, code } = await failuresInOrder(saver)
    expect(yielded).toEqual([])
    expect(code).toBe('CORRUPT')
  })

  it('a consumer that stops early leaves no unhandled rejection behind', async () => {
    expect(await unhandledAfterBreak(await import('../src/index.js'))).toEqual([])
  })

  it('mutant: reads started ahead without a handler reject unhandled once the consumer stopped', async () => {
    const saver = await withReadAhead((original) => ({
      ...original,
      async *readAhead<T, R>(
        items: readonly T[],
        window: () => number,
        start: (item: T) => Promise<R>,
      ) {
        const started = items.slice(0, Math.max(1, window())).map(start)
        for (const [i, item] of items.entries()) yield await (started[i] ?? start(item))
      },
    }))
    expect(await unhandledAfterBreak(saver)).toHaveLength(1)
  })

  it('mutant: a pending-write read started ahead without a handler rejects unhandled too', async () => {
    const saver = await withReadAhead((original) => ({
      ...original,
      startedNow: <R>(load: () => Promise<R>) => {
        const started = load()
        return () => started
      },
    }))
    expect(await unhandledAfterBreak(saver)).toHaveLength(1)
  })
})
