/**
 * The queue paths (docs/runtime/daemons.md, "Queue paths") on every backend with the
 * `nativeQueue` capability (SQLite, Redis): a native queue
 * is refused, never used generically, on a backend without the `nativeQueue`
 * capability; both paths leave the same records, so the readers (`counts`,
 * `peek`, `daemonSnapshot`, which `agent-state daemons` and the inspector
 * use) read a queue whichever path wrote it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createDaemonQueue, daemonSnapshot, openDaemonQueue } from '../src/index.js'
import { daemonHeadKey } from '../src/internal.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import {
  anyFieldOrder,
  damagedRecordsRefused,
  gainedCapability,
  withoutNativeQueue,
} from './daemon-queue-scenarios.js'
import { codeOf } from './error-code.js'
import { createOnPath, NATIVE_QUEUE_BACKENDS } from './queue-paths.js'

const byName = (name: string) => BACKENDS.find((factory) => factory.name === name) as BackendFactory

/** A record's JSON with what differs between two runs (ids, times, tokens, names) masked. */
function shape(bytes: Uint8Array, daemonId: string): unknown {
  return JSON.parse(new TextDecoder().decode(bytes), (key, value) => {
    if (key === 'eventId' || key === 'triggeredAt' || key === 'claimedAt' || key === 'createdAt') {
      return typeof value
    }
    if (key === 'token') return typeof value
    if (key === 'daemonId') return value === daemonId ? '<id>' : value
    return value
  })
}

describe.each(NATIVE_QUEUE_BACKENDS)('queue paths on %s', (nativeName) => {
  let memory: BackendFixture
  let capable: BackendFixture
  beforeEach(() => {
    memory = byName('memory').setup()
    capable = byName(nativeName).setup()
  })
  afterEach(async () => {
    await memory.cleanup()
    await capable.cleanup()
  })

  it('refuses the native path on a backend without the capability, storing nothing; auto falls to generic', async () => {
    const backend = memory.create()
    expect(backend.capabilities.nativeQueue).toBeUndefined()
    expect(await codeOf(createDaemonQueue(backend, 'n', { path: 'native' }))).toBe(
      'QUEUE_PATH_UNAVAILABLE',
    )
    expect((await backend.list({ prefix: 'daemons/' })).entries).toEqual([])
    const auto = await createDaemonQueue(backend, 'a', { path: 'auto' })
    expect(auto.path).toBe('generic')
    const onNative = await createDaemonQueue(capable.create(), 'a', { path: 'auto' })
    expect(onNative.path).toBe('native')
  })

  it('a native queue on a backend that lost the capability: opening refused, readers unchanged', async () => {
    const queue = await createDaemonQueue(capable.create(), 'lost', { path: 'native', capacity: 4 })
    await queue.triggerMany([{ n: 0 }, { n: 1 }])
    const claimed = await queue.claim({ holder: 'h1' })
    expect(claimed?.seq).toBe(0)
    await claimed?.ack()
    await queue.trigger({ n: 2 })
    const lost = withoutNativeQueue(capable.create())
    expect(await codeOf(openDaemonQueue(lost, 'lost'))).toBe('QUEUE_PATH_UNAVAILABLE')
    // The inspectors' reader needs no capability: same records, same view.
    const snapshot = await daemonSnapshot(lost, 'lost')
    expect(snapshot).toMatchObject({
      pendingEvents: [{ n: 1 }, { n: 2 }],
      pendingEventCount: 2,
      queuedEventCount: 2,
      eventQueueCapacity: 4,
      totalIterations: 1,
      inflightEvent: null,
    })
  })

  it('a generic queue on a backend that gained the capability stays generic and loses nothing', async () => {
    const outcome = await gainedCapability(
      { createDaemonQueue, openDaemonQueue },
      withoutNativeQueue(capable.create()),
      capable.create(),
    )
    expect(outcome).toEqual({
      paths: ['generic', 'generic'],
      trigger: 'resolved',
      drained: 'resolved',
      seen: [{ n: 0 }, { n: 1 }, { n: 2 }],
      counts: { head: 3, queuedCount: 0, iterations: 3 },
    })
  })

  it.each(['generic', 'native'] as const)(
    'ackAndClaim of the last event acknowledges it and releases the lease (%s)',
    async (path) => {
      const backend = capable.create()
      const queue = await createDaemonQueue(backend, `last-${path}`, { path })
      await queue.trigger({ n: 0 })
      const delivery = await queue.claim({ holder: 'a', visibilityTimeoutMs: 20_000 })
      expect(await delivery?.ackAndClaim()).toBeNull()
      expect(await queue.counts()).toMatchObject({ head: 1, queuedCount: 0, iterations: 1 })
      expect(await backend.getLease(daemonHeadKey(`last-${path}`))).toBeNull()
      await queue.trigger({ n: 1 })
      const next = await queue.claim({ holder: 'b' })
      expect([next?.seq, next?.attempt, next?.holder]).toEqual([1, 1, 'b'])
      await next?.ack()
    },
  )

  it('the native path reads records in any field order and refuses damaged ones unchanged', async () => {
    const native = createOnPath('native')
    expect(await anyFieldOrder(native, capable)).toEqual({
      stored: 'resolved',
      full: 'QUEUE_FULL',
      seen: [{ n: 0 }, { n: 1 }, { n: 2 }],
      drained: 'resolved',
    })
    expect(await damagedRecordsRefused(native, capable)).toEqual({
      trigger: 'QUEUE_CORRUPT',
      claim: 'QUEUE_CORRUPT',
      tailUnchanged: true,
      misplaced: 'QUEUE_CORRUPT',
    })
  })

  it('both paths leave the same records: same keys, same JSON, read by the same readers', async () => {
    const backend = capable.create()
    const run = async (daemonId: string, path: 'generic' | 'native') => {
      const queue = await createDaemonQueue(backend, daemonId, { path, capacity: 8 })
      await queue.triggerMany([{ n: 0 }, { n: 1 }])
      await queue.trigger({ n: 2 })
      const first = await queue.claim({ holder: 'h' })
      const second = await first?.ackAndClaim()
      await second?.releaseUnseen()
      const third = await queue.claim({ holder: 'h', visibilityTimeoutMs: 20_000 })
      await queue.triggerMany([{ n: 3 }, { n: 4 }])
      return { queue, third }
    }
    const generic = await run('g', 'generic')
    const native = await run('n', 'native')
    expect(native.queue.path).toBe('native')
    const records = async (daemonId: string) => {
      const page = await backend.list({ prefix: `daemons/${daemonId}/` })
      const out = new Map<string, unknown>()
      for (const entry of page.entries) {
        const found = await backend.get(entry.key)
        if (found !== null) {
          out.set(entry.key.slice(`daemons/${daemonId}/`.length), shape(found.value, daemonId))
        }
      }
      return out
    }
    const g = await records('g')
    const n = await records('n')
    // The configuration records the path; everything else is the same JSON.
    expect(n.get('daemon.json')).toEqual({ ...(g.get('daemon.json') as object), path: 'native' })
    for (const name of ['head.json', 'tail.json']) expect(n.get(name)).toEqual(g.get(name))
    // Every event record either path wrote is the same; the native path gives the events of
    // the latest write their own record at once, where the generic path keeps them in the
    // tail record until the next write copies them out.
    const tail = g.get('tail.json') as { last: unknown; earlier?: unknown[] }
    const inTail = [...(tail.earlier ?? []), tail.last]
    for (const [name, record] of n) {
      if (!name.startsWith('events/')) continue
      if (g.has(name)) expect(record).toEqual(g.get(name))
      else expect(inTail).toContainEqual(record)
    }
    for (const name of g.keys()) expect(n.has(name)).toBe(true)
    // The readers see the same queue: counts, the page, the in-flight event (its attempt 1:
    // the hand-out given back unseen does not count).
    const view = async (daemonId: string) => {
      const snapshot = await daemonSnapshot(withoutNativeQueue(backend), daemonId)
      return {
        pending: snapshot.pendingEvents,
        queued: snapshot.queuedEventCount,
        iterations: snapshot.totalIterations,
        inflight: [snapshot.inflightEvent?.seq, snapshot.inflightEvent?.attempt],
      }
    }
    expect(await view('n')).toEqual(await view('g'))
    expect(await view('n')).toEqual({
      pending: [{ n: 2 }, { n: 3 }, { n: 4 }],
      queued: 4,
      iterations: 1,
      inflight: [1, 1],
    })
    await generic.third?.ack()
    await native.third?.ack()
    expect(await native.queue.counts()).toEqual(await generic.queue.counts())
  })
})
