import { isAgentStateError } from '@agent-state/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openDaemonQueue } from '../src/index.js'
import { daemonConfigKey, daemonEventKey, daemonHeadKey, daemonTailKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { capacityExact, tokenPerClaim } from './daemon-queue-scenarios.js'
import { codeOf } from './error-code.js'
import { claimEventually, sleep } from './queue-helpers.js'
import { createOnPath, withQueuePaths } from './queue-paths.js'

describe.each(withQueuePaths(BACKENDS))('daemon queue on $name', (factory) => {
  const createDaemonQueue = createOnPath(factory.path)
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('delivers in FIFO order, one sequence number per trigger, and leaves no event records', async () => {
    const backend = fixture.create()
    const queue = await createDaemonQueue(backend, 'fifo')
    // The run is on the path it is named for (the native one is never a silent fallback).
    expect(queue.path).toBe(factory.path)
    const seqs: number[] = []
    for (let i = 0; i < 6; i++) seqs.push(await queue.trigger({ kind: 'file_changed', i }))
    expect(seqs).toEqual([0, 1, 2, 3, 4, 5])
    expect((await queue.peek(3)).map((record) => record.event)).toEqual([
      { kind: 'file_changed', i: 0 },
      { kind: 'file_changed', i: 1 },
      { kind: 'file_changed', i: 2 },
    ])
    // A consumer on another instance sees the same order.
    const consumer = await openDaemonQueue(fixture.create(), 'fifo')
    const seen: unknown[] = []
    for (;;) {
      const delivery = await consumer.claim({ holder: 'c1' })
      if (delivery === null) break
      expect(delivery.attempt).toBe(1)
      seen.push([delivery.seq, delivery.event])
      await delivery.ack()
    }
    expect(seen).toEqual(seqs.map((seq) => [seq, { kind: 'file_changed', i: seq }]))
    expect(await queue.counts()).toMatchObject({ head: 6, next: 6, queuedCount: 0, iterations: 6 })
    const left = await backend.list({ prefix: 'daemons/fifo/events/' })
    expect(left.entries).toEqual([])
    // What an ack that crashed between its head write and its cleanup leaves: the next claim removes it.
    await backend.put(daemonEventKey('fifo', 5), new TextEncoder().encode('{"left":"over"}'))
    await queue.trigger({ kind: 'file_changed', i: 6 })
    const sixth = await consumer.claim()
    expect(sixth?.seq).toBe(6)
    expect(await backend.head(daemonEventKey('fifo', 5))).toBeNull()
    await sixth?.ack()
  })

  it('is bounded: QUEUE_FULL at capacity (pending plus in flight) stores nothing', async () => {
    const backend = fixture.create()
    const queue = await createDaemonQueue(backend, 'small', { capacity: 3 })
    for (let i = 0; i < 3; i++) await queue.trigger({ i })
    const tailBefore = await backend.get(daemonTailKey('small'))
    const full = await queue.trigger({ i: 3 }).catch((error: unknown) => error)
    expect(isAgentStateError(full, 'QUEUE_FULL')).toBe(true)
    expect(isAgentStateError(full) && full.context).toMatchObject({
      daemonId: 'small',
      capacity: 3,
    })
    // Nothing changed: the tail record has the same version, the page the same events.
    expect((await backend.get(daemonTailKey('small')))?.meta.version).toBe(tailBefore?.meta.version)
    expect((await queue.peek()).map((record) => record.event)).toEqual([
      { i: 0 },
      { i: 1 },
      { i: 2 },
    ])
    expect((await queue.counts()).queuedCount).toBe(3)

    // The in-flight event still counts against the capacity.
    const delivery = await claimEventually(queue, { holder: 'c' })
    expect(await codeOf(queue.trigger({ i: 3 }))).toBe('QUEUE_FULL')
    await delivery.ack()
    expect(await queue.trigger({ i: 3 })).toBe(3)
    expect(await codeOf(queue.trigger({ i: 4 }))).toBe('QUEUE_FULL')
  })

  it('holds exactly its capacity, and every claim gets a larger fencing token', async () => {
    // The same steps run against broken native scripts in daemon-queue-native-mutants.test.ts.
    expect(await capacityExact(createDaemonQueue, fixture)).toEqual({
      single: 'QUEUE_FULL',
      batch: 'QUEUE_FULL',
      queued: 2,
    })
    const tokens = await tokenPerClaim(createDaemonQueue, fixture)
    expect(tokens.second).toBeGreaterThan(tokens.first)
    expect(tokens.attempts).toEqual([1, 2])
  })

  it('never exceeds the capacity under concurrent producers on separate instances', async () => {
    const capacity = 25
    await createDaemonQueue(fixture.create(), 'race', { capacity })
    const producers = await Promise.all(
      [0, 1, 2, 3].map(() => openDaemonQueue(fixture.create(), 'race')),
    )
    const outcomes = await Promise.all(
      producers.flatMap((queue, p) =>
        Array.from({ length: 10 }, (_, i) =>
          queue.trigger({ p, i }).then(
            (seq) => ({ seq, p, i }),
            (error: unknown) => {
              if (isAgentStateError(error, 'QUEUE_FULL')) return null
              throw error
            },
          ),
        ),
      ),
    )
    const stored = outcomes.filter((outcome) => outcome !== null)
    expect(stored).toHaveLength(capacity)
    expect(stored.map((outcome) => outcome.seq).sort((a, b) => a - b)).toEqual(
      Array.from({ length: capacity }, (_, seq) => seq),
    )
    const consumer = producers[0]
    if (consumer === undefined) throw new Error('no producer')
    const delivered: unknown[] = []
    for (;;) {
      const delivery = await consumer.claim()
      if (delivery === null) break
      delivered.push({ seq: delivery.seq, ...(delivery.event as object) })
      await delivery.ack()
    }
    expect(delivered).toEqual([...stored].sort((a, b) => a.seq - b.seq))
    // 40 triggers race on one tail record and the losers retry: on S3 at load 30 that outran
    // the default 30 s; the limit only stops a hang, it measures nothing.
  }, 120_000)

  it('refuses an ack by a stale delivery after a takeover, and changes nothing', async () => {
    const queue = await createDaemonQueue(fixture.create(), 'stale')
    await queue.trigger({ n: 0 })
    await queue.trigger({ n: 1 })
    const first = await claimEventually(queue, { holder: 'a', visibilityTimeoutMs: 1500 })
    expect(await codeOf(queue.claim({ holder: 'b' }))).toBe('DELIVERY_IN_FLIGHT')
    await sleep(1700)
    const other = await openDaemonQueue(fixture.create(), 'stale')
    const second = await claimEventually(other, { holder: 'b', visibilityTimeoutMs: 10_000 })
    expect([second.seq, second.attempt, second.event]).toEqual([0, 2, { n: 0 }])
    expect(second.token).toBeGreaterThan(first.token)
    const headBefore = await fixture.create().get(daemonHeadKey('stale'))
    expect(await codeOf(first.ack())).toBe('LEASE_LOST')
    expect(await codeOf(first.heartbeat())).toBe('LEASE_LOST')
    expect(await codeOf(first.release())).toBe('LEASE_LOST')
    expect((await fixture.create().get(daemonHeadKey('stale')))?.meta.version).toBe(
      headBefore?.meta.version,
    )
    await second.ack()
    expect(await queue.counts()).toMatchObject({ head: 1, iterations: 1 })
    // A settled delivery is stale too.
    expect(await codeOf(second.ack())).toBe('LEASE_LOST')
  })

  it('an expired delivery is handed out again first, with its attempt count', async () => {
    const queue = await createDaemonQueue(fixture.create(), 'expiry')
    for (let i = 0; i < 3; i++) await queue.trigger({ i })
    // The claim itself writes under a lease of this length: 250 ms was shorter than an S3
    // write on a loaded CI box, and the claim failed LEASE_LOST before the test began.
    const crashed = await claimEventually(queue, { visibilityTimeoutMs: 1000 })
    expect([crashed.seq, crashed.attempt]).toEqual([0, 1])
    const again = await claimEventually(queue, { visibilityTimeoutMs: 2000 })
    expect([again.seq, again.attempt]).toEqual([0, 2])
    // A heartbeat keeps it invisible past its first expiry (generous margins: a loaded CI box).
    await sleep(1200)
    await again.heartbeat()
    await sleep(1200)
    expect(await codeOf(queue.claim())).toBe('DELIVERY_IN_FLIGHT')
    await again.ack()
    const next = await claimEventually(queue, {})
    expect([next.seq, next.attempt]).toEqual([1, 1])
  })

  it('release puts the event back at the head', async () => {
    const queue = await createDaemonQueue(fixture.create(), 'release')
    await queue.trigger('a')
    await queue.trigger('b')
    const first = await claimEventually(queue, {})
    await first.release()
    const again = await claimEventually(queue, {})
    expect([again.seq, again.event, again.attempt]).toEqual([0, 'a', 2])
    await again.ack()
    const next = await claimEventually(queue, {})
    expect([next.seq, next.event]).toEqual([1, 'b'])
  })

  it('rejects bad input with its own code and stores nothing', async () => {
    const backend = fixture.create()
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    const queue = await createDaemonQueue(backend, 'input', { maxEventBytes: 64 })
    for (const bad of [
      undefined,
      () => 1,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      1n,
      cyclic,
      { a: undefined },
      new Date(),
    ]) {
      expect(await codeOf(queue.trigger(bad))).toBe('INVALID_EVENT')
    }
    expect(await codeOf(queue.trigger('x'.repeat(63)))).toBe('EVENT_TOO_LARGE')
    expect(await queue.trigger('x'.repeat(62))).toBe(0)
    expect((await queue.counts()).next).toBe(1)

    for (const capacity of [0, -1, 1.5, 1e9, Number.NaN]) {
      expect(await codeOf(createDaemonQueue(backend, 'bad-cap', { capacity }))).toBe(
        'INVALID_QUEUE_OPTIONS',
      )
    }
    expect(await backend.get(daemonConfigKey('bad-cap'))).toBeNull()
    expect(await backend.get(daemonTailKey('bad-cap'))).toBeNull()
    expect(await codeOf(openDaemonQueue(backend, 'bad-cap'))).toBe('DAEMON_NOT_FOUND')
    expect(await codeOf(openDaemonQueue(backend, 'never-made'))).toBe('DAEMON_NOT_FOUND')
    expect(await codeOf(openDaemonQueue(backend, '../escape'))).toBe('INVALID_DAEMON_ID')
    expect(await codeOf(createDaemonQueue(backend, 'a/b'))).toBe('INVALID_DAEMON_ID')
    expect(await codeOf(createDaemonQueue(backend, 'input'))).toBe('DAEMON_EXISTS')
    expect(await codeOf(queue.claim({ visibilityTimeoutMs: 0 }))).toBe('INVALID_QUEUE_OPTIONS')
  })

  it('reports damaged records as QUEUE_CORRUPT, never as an empty queue', async () => {
    const backend = fixture.create()
    const queue = await createDaemonQueue(backend, 'damaged')
    await queue.trigger({ n: 0 })
    await queue.trigger({ n: 1 })
    await backend.put(daemonEventKey('damaged', 0), new TextEncoder().encode('{"format":'))
    expect(await codeOf(queue.claim())).toBe('QUEUE_CORRUPT')
    await backend.delete(daemonEventKey('damaged', 0))
    // The event below the newest is gone while the tail points past it.
    expect(await codeOf(queue.claim())).toBe('QUEUE_CORRUPT')
    await backend.put(daemonTailKey('damaged'), new TextEncoder().encode('[]'))
    expect(await codeOf(queue.trigger({ n: 2 }))).toBe('QUEUE_CORRUPT')
    await backend.put(daemonConfigKey('damaged'), new TextEncoder().encode('nope'))
    expect(await codeOf(openDaemonQueue(backend, 'damaged'))).toBe('QUEUE_CORRUPT')
  })
})
