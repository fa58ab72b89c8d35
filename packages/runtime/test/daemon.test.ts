import type { Backend } from '@agent-state/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  daemonSnapshot,
  inspectWorker,
  openDaemonQueue,
  resumeDaemon,
  type SpawnDaemonOptions,
  spawnDaemon as spawnOnDefaultPath,
  waitForIdle,
} from '../src/index.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { sleep } from './queue-helpers.js'
import { withQueuePaths } from './queue-paths.js'

describe.each(withQueuePaths(BACKENDS))('daemon lifecycle on $name', (factory) => {
  /** Every daemon of the run on its path (the native one: its kept-lease loop natively). */
  const spawnDaemon = (backend: Backend, options: SpawnDaemonOptions = {}) =>
    spawnOnDefaultPath(backend, { ...options, path: factory.path })
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('spawn, trigger, snapshot, stop mid-turn, resume elsewhere: the in-flight event comes first', async () => {
    const backend = fixture.create()
    const daemon = await spawnDaemon(backend, {
      daemonId: 'reviewer',
      capacity: 8,
      wakeIntervalMs: 1000,
      watchPaths: ['src/'],
      state: { seen: 0 },
    })
    expect((await openDaemonQueue(backend, 'reviewer')).path).toBe(factory.path)
    const fresh = await daemonSnapshot(backend, 'reviewer')
    expect(fresh).toMatchObject({
      daemonState: 'idle',
      pendingEvents: [],
      pendingEventCount: 0,
      inflightEvent: null,
      queuedEventCount: 0,
      eventQueueCapacity: 8,
      wakeIntervalMs: 1000,
      watchPaths: ['src/'],
      totalIterations: 0,
    })
    expect(fresh.savedAt).toBe(fresh.worker?.updatedAt)
    for (const n of [0, 1, 2]) await daemon.trigger({ n })
    const turn = await daemon.next()
    expect([turn?.seq, turn?.attempt]).toEqual([0, 1])
    expect(await codeOf(daemon.next())).toBe('DELIVERY_IN_FLIGHT')
    const busy = await daemonSnapshot(backend, 'reviewer', { pageSize: 1 })
    expect(busy).toMatchObject({
      daemonState: 'active',
      inflightEvent: { seq: 0, attempt: 1, event: { n: 0 } },
      pendingEvents: [{ n: 1 }],
      pendingEventCount: 2,
      queuedEventCount: 3,
    })

    await daemon.stop('deploy')
    expect(await codeOf(daemon.next())).toBe('WORKER_NOT_RUNNING')
    const stopped = await daemonSnapshot(backend, 'reviewer')
    expect(stopped).toMatchObject({
      daemonState: 'stopped',
      inflightEvent: null,
      pendingEvents: [{ n: 0 }, { n: 1 }, { n: 2 }],
      pendingEventCount: 3,
    })
    expect((await inspectWorker(backend, 'reviewer')).state).toEqual({
      app: { seen: 0 },
      daemon: {
        pendingEventCount: 3,
        queuedEventCount: 3,
        inflightEvent: null,
        wakeIntervalMs: 1000,
        watchPaths: ['src/'],
        eventQueueCapacity: 8,
        decidedSeq: null,
      },
    })

    const resumed = await resumeDaemon(fixture.create(), 'reviewer', { holder: 'host-b' })
    expect(resumed.state).toEqual({ seen: 0 })
    const seen: unknown[] = []
    for (let next = await resumed.next(); next !== null; next = await resumed.next()) {
      seen.push([next.seq, next.attempt])
      await resumed.ack(next, { state: { seen: seen.length } })
    }
    expect(seen).toEqual([
      [0, 2],
      [1, 1],
      [2, 1],
    ])
    const done = await daemonSnapshot(backend, 'reviewer')
    expect(done).toMatchObject({ daemonState: 'idle', totalIterations: 3, queuedEventCount: 0 })
    expect(done.worker?.iterationsCompleted).toBe(3)
    expect(resumed.state).toEqual({ seen: 3 })
  })

  it('waitForIdle resolves once idle, empty and at the iteration count; times out; fails on stop', async () => {
    const backend = fixture.create()
    const daemon = await spawnDaemon(backend, { daemonId: 'waiter' })
    const before = await waitForIdle(backend, 'waiter')
    expect(before.totalIterations).toBe(0)

    // A consumer on another instance: the waiter only sees its progress by polling.
    const consumer = await openDaemonQueue(fixture.create(), 'waiter')
    for (const n of [0, 1, 2]) await daemon.trigger({ n })
    const waited = waitForIdle(backend, 'waiter', { minIterations: before.totalIterations + 3 })
    const drain = (async () => {
      for (let k = 0; k < 3; k++) {
        await sleep(30)
        const delivery = await consumer.claim()
        await delivery?.ack()
      }
    })()
    const after = await waited
    await drain
    expect(after).toMatchObject({ daemonState: 'idle', totalIterations: 3, queuedEventCount: 0 })

    const timeout = await waitForIdle(backend, 'waiter', {
      minIterations: 4,
      timeoutMs: 200,
    }).catch((error: unknown) => error)
    expect(timeout).toMatchObject({
      code: 'WAIT_TIMEOUT',
      context: { totalIterations: 3, minIterations: 4, queuedEventCount: 0 },
    })
    const stopping = codeOf(waitForIdle(backend, 'waiter', { minIterations: 9, timeoutMs: 20_000 }))
    await sleep(50)
    await daemon.stop()
    expect(await stopping).toBe('DAEMON_STOPPED')
    expect(await codeOf(waitForIdle(backend, 'waiter'))).toBe('DAEMON_STOPPED')
  })

  it('a change in this process wakes a waiter at once, without waiting for its next poll', async () => {
    const backend = fixture.create()
    const daemon = await spawnDaemon(backend, { daemonId: 'wake' })
    await daemon.trigger({ n: 0 })
    // Polls every 60 s at most: only the in-process signal can end this wait in time.
    const waited = waitForIdle(backend, 'wake', {
      minIterations: 1,
      timeoutMs: 120_000,
      pollMinMs: 60_000,
      pollMaxMs: 60_000,
    })
    await sleep(50)
    const delivery = await daemon.next()
    if (delivery === null) throw new Error('no delivery')
    await daemon.ack(delivery)
    const outcome = await Promise.race([waited, sleep(15_000).then(() => 'still waiting')])
    expect(outcome).toMatchObject({ totalIterations: 1, daemonState: 'idle' })
    await daemon.stop()
  })

  it('unknown and invalid daemons, bad options: each its own code, nothing stored', async () => {
    const backend = fixture.create()
    expect(await codeOf(daemonSnapshot(backend, 'nobody'))).toBe('DAEMON_NOT_FOUND')
    expect(await codeOf(waitForIdle(backend, 'nobody'))).toBe('DAEMON_NOT_FOUND')
    expect(await codeOf(resumeDaemon(backend, 'nobody'))).toBe('DAEMON_NOT_FOUND')
    expect(await codeOf(daemonSnapshot(backend, '..'))).toBe('INVALID_DAEMON_ID')
    expect(await codeOf(spawnDaemon(backend, { daemonId: 'cap', capacity: 0 }))).toBe(
      'INVALID_QUEUE_OPTIONS',
    )
    expect(await codeOf(spawnDaemon(backend, { daemonId: 'cap', capacity: 10_000_000 }))).toBe(
      'INVALID_QUEUE_OPTIONS',
    )
    expect(await codeOf(daemonSnapshot(backend, 'cap'))).toBe('DAEMON_NOT_FOUND')
    expect((await backend.list({ prefix: 'workers/' })).entries).toEqual([])
    await spawnDaemon(backend, { daemonId: 'twice' })
    expect(await codeOf(spawnDaemon(backend, { daemonId: 'twice' }))).toBe('DAEMON_EXISTS')
    expect(await codeOf(waitForIdle(backend, 'twice', { timeoutMs: -1 }))).toBe(
      'INVALID_QUEUE_OPTIONS',
    )
    expect(await codeOf(resumeDaemon(backend, 'twice'))).toBe('WORKER_NOT_SUSPENDED')
  })
})
