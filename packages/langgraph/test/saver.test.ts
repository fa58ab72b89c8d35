import { setTimeout as sleep } from 'node:timers/promises'
import { errorCodeOf } from '@agent-state/contract'
import { type Backend, isAgentStateError } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import {
  type CheckpointTuple,
  ERROR,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint'
import { beforeAll, describe, expect, it } from 'vitest'
import { createCheckpointSaver } from '../src/index.js'
import { BACKENDS, describeEachBackend } from './backends.js'
import { allKeys, putChain, recordingGets } from './helpers.js'

let counter = 0
const freshPrefix = () => `lgt-${++counter}`

async function collect(iterable: AsyncIterable<CheckpointTuple>): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = []
  for await (const item of iterable) out.push(item)
  return out
}

describeEachBackend(
  BACKENDS,
  (name) => `LangGraph saver on ${name}`,
  (shared) => {
    let backend: Backend
    beforeAll(() => {
      backend = shared.backend()
    })

    it('deleteThread leaves no checkpoint, blob, write or head of that thread, and keeps the others', async () => {
      for (const ownership of [undefined, { holder: 'me', ttlMs: 30_000 }]) {
        const prefix = freshPrefix()
        const saver = createCheckpointSaver(
          ownership === undefined ? { backend, prefix } : { backend, prefix, ownership },
        )
        await putChain(saver, 'doomed', 3)
        await putChain(saver, 'doomed', 2, { ns: 'child' })
        await putChain(saver, 'kept', 2)
        const before = await allKeys(backend, `${prefix}/`)
        expect(before.some((key) => key.endsWith('/m'))).toBe(true)
        expect(before.some((key) => key.includes('/w/'))).toBe(true)
        await saver.deleteThread('doomed')
        const after = await allKeys(backend, `${prefix}/`)
        expect(after.filter((key) => key.startsWith(saver.keys.thread('doomed')))).toEqual([])
        expect(after).toEqual(before.filter((key) => key.startsWith(saver.keys.thread('kept'))))
        expect(await saver.getTuple({ configurable: { thread_id: 'doomed' } })).toBeUndefined()
        expect(await saver.getTuple({ configurable: { thread_id: 'kept' } })).toBeDefined()
      }
    })

    it("a filtered list reads each candidate's record once, and writes only of checkpoints it yields", async () => {
      const prefix = freshPrefix()
      const writer = createCheckpointSaver({ backend, prefix })
      const configs = await putChain(writer, 'thread', 6)
      const recorded = recordingGets(backend)
      const reader = createCheckpointSaver({ backend: recorded.backend, prefix })
      const yielded = await collect(
        reader.list({ configurable: { thread_id: 'thread' } }, { limit: 2, filter: { step: 1 } }),
      )
      expect(yielded.map((tuple) => tuple.config.configurable?.checkpoint_id)).toEqual([
        configs[1]?.configurable?.checkpoint_id,
      ])
      // Six records (the inherited `constant` comes from the first one, already read),
      // then the one pending write of the yielded checkpoint; no other record.
      const yieldedKeys = reader.keys.checkpoint(
        'thread',
        '',
        configs[1]?.configurable?.checkpoint_id,
      )
      expect(recorded.gets.filter((key) => key.endsWith('/m'))).toEqual(
        [...configs]
          .reverse()
          .map(
            (config) =>
              reader.keys.checkpoint('thread', '', config.configurable?.checkpoint_id).meta,
          ),
      )
      expect(recorded.gets.filter((key) => !key.endsWith('/m'))).toEqual([
        reader.keys.write(yieldedKeys, 'task-1', 0, 0),
      ])
      recorded.gets.length = 0
      const limited = await collect(
        reader.list({ configurable: { thread_id: 'thread' } }, { limit: 1 }),
      )
      expect(limited[0]?.checkpoint.id).toBe(configs[5]?.configurable?.checkpoint_id)
      // Its record, its write and the holder of `constant` (the first checkpoint's record).
      expect(recorded.gets).toHaveLength(3)
    })

    it('prune keeps the latest checkpoint and its nearest ancestors whole, and removes the rest', async () => {
      const prefix = freshPrefix()
      const saver = createCheckpointSaver({ backend, prefix })
      const main = await putChain(saver, 't', 5)
      // A branch from the second checkpoint (time travel), older than the latest.
      await putChain(saver, 't', 1, { from: main[1] as never, label: 'fork' })
      const tail = await putChain(saver, 't', 1, { from: main[4] as never, label: 'tail' })
      const keptConfigs = [tail[0], main[4], main[3]]
      const before = await Promise.all(keptConfigs.map((config) => saver.getTuple(config as never)))
      const result = await saver.prune('t', { keepLast: 3 })
      expect(result.checkpoints).toBe(4)
      const after = await Promise.all(keptConfigs.map((config) => saver.getTuple(config as never)))
      // What is kept reads exactly as before, shared blobs included (`constant` was written once).
      expect(after).toEqual(before)
      expect(after[2]?.checkpoint.channel_values).toEqual({ counter: 'main-3', constant: 'same' })
      expect(after[2]?.pendingWrites).toEqual([['task-3', 'counter', 'write-3']])
      const history = await collect(saver.list({ configurable: { thread_id: 't' } }))
      expect(history.map((tuple) => tuple.checkpoint.id)).toEqual(
        keptConfigs.map((config) => config?.configurable?.checkpoint_id),
      )
      // No record of a removed checkpoint survives: 3 checkpoints x (record, 1 write). Their
      // `counter` values are inline; `constant`, inherited from the removed first checkpoint,
      // was copied out to its channel value record before that record was removed.
      const keys = await allKeys(backend, `${prefix}/`)
      expect(keys.filter((key) => key.includes('/c/'))).toHaveLength(6)
      expect(keys.filter((key) => key.includes('/v/'))).toEqual([
        saver.keys.blob(
          't',
          '',
          'constant',
          String(before[2]?.checkpoint.channel_versions.constant),
        ),
      ])
      expect(await saver.prune('t', { keepLast: 3 })).toEqual({
        checkpoints: 0,
        writes: 0,
        blobs: 0,
      })
    })

    it('keepLast prunes after every put', async () => {
      const prefix = freshPrefix()
      const saver = createCheckpointSaver({ backend, prefix, keepLast: 2 })
      const configs = await putChain(saver, 't', 4)
      const history = await collect(saver.list({ configurable: { thread_id: 't' } }))
      expect(history.map((tuple) => tuple.checkpoint.id)).toEqual([
        configs[3]?.configurable?.checkpoint_id,
        configs[2]?.configurable?.checkpoint_id,
      ])
    })

    it('pending writes come back in (taskPath, taskId, idx) order; regular writes keep the first, special ones the last', async () => {
      const saver = createCheckpointSaver({ backend, prefix: freshPrefix() })
      const config = await saver.put(
        { configurable: { thread_id: 't', checkpoint_ns: '' } },
        { ...emptyCheckpoint(), id: uuid6(-3) },
        { source: 'loop', step: 0, parents: {} },
        {},
      )
      await saver.putWrites(
        config,
        [
          ['a', 1],
          ['b', 2],
        ],
        'task-z',
        '~path-b',
      )
      await saver.putWrites(config, [['c', 3]], 'task-y', '~path-b')
      await saver.putWrites(config, [['d', 4]], 'task-x', '~path-a')
      await saver.putWrites(config, [['e', 5]], 'task-input')
      await saver.putWrites(config, [['a', 'again']], 'task-z', '~path-b')
      await saver.putWrites(config, [[ERROR, 'first']], 'task-y', '~path-b')
      await saver.putWrites(config, [[ERROR, 'last']], 'task-y', '~path-b')
      // Path order differs from task-id order, and idx 10 sorts after 2 (not as text).
      await saver.putWrites(config, [['f', 6]], 'task-a', '~path-c')
      const many = Array.from({ length: 11 }, (_, i) => ['m', i] as [string, number])
      await saver.putWrites(config, many, 'task-m', '~path-c')
      const tuple = await saver.getTuple(config)
      expect(tuple?.pendingWrites).toEqual([
        ['task-input', 'e', 5],
        ['task-x', 'd', 4],
        ['task-y', ERROR, 'last'],
        ['task-y', 'c', 3],
        ['task-z', 'a', 1],
        ['task-z', 'b', 2],
        ['task-a', 'f', 6],
        ...many.map(([channel, value]) => ['task-m', channel, value]),
      ])
    })

    it('ownership: a second owner is refused; a released thread is taken at once; an expired owner is refused', async () => {
      const prefix = freshPrefix()
      const a = createCheckpointSaver({ backend, prefix, ownership: { holder: 'a', ttlMs: 1000 } })
      const b = createCheckpointSaver({ backend, prefix, ownership: { holder: 'b', ttlMs: 1000 } })
      const [first] = await putChain(a, 't', 1)
      expect(await errorCodeOf(putChain(b, 't', 1))).toBe('LEASE_HELD')
      expect(await errorCodeOf(b.deleteThread('t'))).toBe('LEASE_HELD')
      expect(await b.getTuple({ configurable: { thread_id: 't' } })).toBeDefined()
      expect(await a.releaseThread('t')).toBe(true)
      const [taken] = await putChain(b, 't', 1, { from: first as never })
      // b stops renewing; a takes over after expiry, and b's next write is refused.
      const deadline = Date.now() + 10_000
      let retaken: Awaited<ReturnType<typeof putChain>> | undefined
      while (retaken === undefined) {
        try {
          retaken = await putChain(a, 't', 1, { from: taken as never })
        } catch (error) {
          if (!isAgentStateError(error, 'LEASE_HELD') || Date.now() > deadline) throw error
          await sleep(200)
        }
      }
      // a gives the thread up again: b's lease is free to take, but the head moved on, so b
      // must still be refused (taking it back would fork the chain after a's checkpoint).
      expect(await a.releaseThread('t')).toBe(true)
      expect(await errorCodeOf(putChain(b, 't', 1, { from: taken as never }))).toBe('LEASE_LOST')
      const history = await collect(a.list({ configurable: { thread_id: 't' } }))
      expect(history.map((tuple) => tuple.checkpoint.id)).toEqual([
        retaken[0]?.configurable?.checkpoint_id,
        taken?.configurable?.checkpoint_id,
        first?.configurable?.checkpoint_id,
      ])
    })

    it('ownership: an owner idle past its lease keeps the thread when nobody took it meanwhile', async () => {
      const prefix = freshPrefix()
      const a = createCheckpointSaver({ backend, prefix, ownership: { holder: 'a', ttlMs: 1000 } })
      const [first] = await putChain(a, 't', 1)
      const expiredLease = a.keys.owner('t')
      const before = await backend.getLease(expiredLease)
      await sleep(1300)
      const [second] = await putChain(a, 't', 1, { from: first as never })
      const after = await backend.getLease(expiredLease)
      expect(after?.token).toBeGreaterThan(before?.token ?? Number.POSITIVE_INFINITY)
      const history = await collect(a.list({ configurable: { thread_id: 't' } }))
      expect(history.map((tuple) => tuple.checkpoint.id)).toEqual([
        second?.configurable?.checkpoint_id,
        first?.configurable?.checkpoint_id,
      ])
    })

    it('a damaged record is CORRUPT, never a missing checkpoint', async () => {
      const saver = createCheckpointSaver({ backend, prefix: freshPrefix() })
      const [config] = await putChain(saver, 't', 1)
      const id = config?.configurable?.checkpoint_id as string
      const key = saver.keys.checkpoint('t', '', id).meta
      const stored = await backend.get(key)
      // A record cut short (its lengths no longer add up), then one that is not a record.
      await backend.put(key, stored?.value.subarray(0, -1) as Uint8Array)
      expect(await errorCodeOf(saver.getTuple(config as never))).toBe('CORRUPT')
      await backend.put(key, new TextEncoder().encode('garbage'))
      expect(await errorCodeOf(saver.getTuple(config as never))).toBe('CORRUPT')
    })

    it('a damaged thread head is CORRUPT for readers and owners, and the owner lets the lease go', async () => {
      const prefix = freshPrefix()
      const owner = createCheckpointSaver({
        backend,
        prefix,
        ownership: { holder: 'o', ttlMs: 30_000 },
      })
      await putChain(owner, 't', 1)
      await owner.releaseThread('t')
      await backend.put(owner.keys.owner('t'), new TextEncoder().encode('{"v":1,"epochs":"x"}'))
      expect(await errorCodeOf(owner.getTuple({ configurable: { thread_id: 't' } }))).toBe(
        'CORRUPT',
      )
      expect(await errorCodeOf(putChain(owner, 't', 1))).toBe('CORRUPT')
      expect(await backend.getLease(owner.keys.owner('t'))).toBeNull()
    })
  },
)

describe('LangGraph saver limits', () => {
  it('a checkpoint over the backend value limit is VALUE_TOO_LARGE and nothing is written', async () => {
    const backend = createMemoryBackend({ maxValueBytes: 4096 })
    const saver = createCheckpointSaver({ backend, ownership: { holder: 'x', ttlMs: 5000 } })
    const big = 'x'.repeat(5000)
    const result = saver.put(
      { configurable: { thread_id: 't', checkpoint_ns: '' } },
      {
        ...emptyCheckpoint(),
        id: uuid6(-3),
        channel_values: { small: 1, big },
        channel_versions: { small: 1, big: 1 },
      },
      { source: 'input', step: -1, parents: {} },
      { small: 1, big: 1 },
    )
    expect(await errorCodeOf(result)).toBe('VALUE_TOO_LARGE')
    expect(await allKeys(backend, '')).toEqual([])
    // Not even the ownership lease was taken.
    expect(await backend.getLease(saver.keys.owner('t'))).toBeNull()
    const [config] = await putChain(saver, 't', 1)
    const before = await allKeys(backend, '')
    expect(
      await errorCodeOf(
        saver.putWrites(
          config as never,
          [
            ['ok', 1],
            ['big', big],
          ],
          'task',
        ),
      ),
    ).toBe('VALUE_TOO_LARGE')
    expect(await allKeys(backend, '')).toEqual(before)
  })

  it('rejects a put without thread_id and putWrites without checkpoint_id with INVALID_ARGUMENT', async () => {
    const saver = createCheckpointSaver({ backend: createMemoryBackend() })
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(-3) }
    const metadata = { source: 'input' as const, step: -1, parents: {} }
    expect(await errorCodeOf(saver.put({}, checkpoint, metadata, {}))).toBe('INVALID_ARGUMENT')
    expect(await errorCodeOf(saver.putWrites({ configurable: { thread_id: 't' } }, [], 'x'))).toBe(
      'INVALID_ARGUMENT',
    )
  })
})
