/**
 * The daemon's consumer loop on the kept delivery lease, on every backend:
 * `ack` claims the next event keeping the lease (`Delivery.ackAndClaim`) and
 * `next()` hands it out; one lease acquisition for a whole run of events,
 * fenced by token (not holder name) when the kept delivery went stale, and
 * given back uncounted by `stop`; and `daemon.triggerMany`. daemon-kept-lease-mutants.test.ts runs the
 * same scenarios against broken runtimes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as rt from '../src/index.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import {
  daemonTriggerMany,
  keptLeaseLoop,
  staleKeptSameHolder,
  stopWithKept,
  takeoverWithKept,
} from './daemon-kept-lease-scenarios.js'
import { createOnPath, withQueuePaths } from './queue-paths.js'

describe.each(withQueuePaths(BACKENDS))('daemon kept lease on $name', (factory) => {
  /** The runtime with every queue and daemon of the run on the factory's path. */
  const onPath: typeof rt = {
    ...rt,
    createDaemonQueue: createOnPath(factory.path),
    spawnDaemon: (backend, options = {}) =>
      rt.spawnDaemon(backend, { ...options, path: factory.path }),
  }
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('next/ack keep the delivery lease from event to event: one acquisition for the run', async () => {
    const fifo = Array.from({ length: 8 }, (_, n) => [n, { n }, 1])
    // Backend calls for 8 events, the empty next() at the end included (measured; the count
    // per event is the figure): before the kept lease, 81 without and 105 with a
    // state update, 8 lease acquisitions and 8 releases.
    // On the native path each claim (the first, each ack's ackAndClaim, the empty one at the
    // end) is one queueClaim script and nothing else.
    const native = factory.path === 'native'
    expect(await keptLeaseLoop(onPath, fixture, false)).toEqual({
      seen: fifo,
      tokens: 1,
      ...(native
        ? { calls: { 'nativeQueue.queueClaim': 10 }, total: 10 }
        : {
            calls: { get: 22, head: 8, put: 9, acquireLease: 1, renewLease: 8, releaseLease: 1 },
            total: 49,
          }),
      state: { done: 0 },
      snapshot: { daemonState: 'idle', totalIterations: 8, queued: 0 },
    })
    expect(await keptLeaseLoop(onPath, fixture, true)).toEqual({
      seen: fifo,
      tokens: 1,
      // The state updates' checkpoints (2 reads and a write each) are the same on both paths.
      ...(native
        ? { calls: { get: 16, put: 8, 'nativeQueue.queueClaim': 10 }, total: 34 }
        : {
            calls: { get: 38, head: 8, put: 17, acquireLease: 1, renewLease: 8, releaseLease: 1 },
            total: 73,
          }),
      state: { done: 8 },
      snapshot: { daemonState: 'idle', totalIterations: 8, queued: 0 },
    })
  })

  it('a stale kept delivery is not handed out when a consumer with the same holder name took it', async () => {
    const expected = {
      newerToken: true,
      // The kept claim lapsed: it counts as an attempt, like a consumer that died.
      taken: [1, 2],
      heartbeat: 'not called',
      staleNext: 'DELIVERY_IN_FLIGHT',
      after: [2, 1],
    }
    expect(await staleKeptSameHolder(onPath, fixture)).toEqual(expected)
    expect(await staleKeptSameHolder(onPath, fixture, true)).toEqual({
      ...expected,
      heartbeat: 'resolved',
    })
  })

  it('stop gives the kept event back uncounted: it comes first after resume, attempt 1', async () => {
    expect(await stopWithKept(onPath, fixture)).toEqual({
      between: [1, 1],
      stopped: null,
      resumed: [1, { n: 1 }, 1],
      state: { done: 1 },
    })
  })
  it('daemon.triggerMany stores a batch all or nothing under the capacity, in order', async () => {
    expect(await daemonTriggerMany(onPath, fixture)).toEqual({
      seqs: [0, 1],
      full: 'QUEUE_FULL',
      queued: 2,
      taken: [{ n: 0 }, { n: 1 }],
    })
  })
  it('a daemon taken over gives its kept event back: the new owner gets it at once, attempt 1', async () => {
    expect(await takeoverWithKept(onPath, fixture)).toEqual({
      refused: 'LEASE_LOST',
      taken: [1, 1],
    })
  })
})
