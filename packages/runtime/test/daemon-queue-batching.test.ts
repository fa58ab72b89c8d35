/**
 * The queue's batch paths on every backend: `triggerMany` (one write, all or
 * nothing under the capacity), overlapping `trigger` calls combined into one
 * write, and a consumer that keeps its delivery lease with `ackAndClaim`
 * (fenced by token, not holder name). daemon-queue-mutants.test.ts runs the
 * same scenarios against broken runtimes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import * as rt from '../src/index.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import {
  batchInputRefused,
  keptLeaseChain,
  overlappingTriggers,
  staleTokenSameHolder,
  triggerManyAllOrNothing,
} from './daemon-queue-scenarios.js'

describe.each(BACKENDS)('daemon queue batching on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('triggerMany stores a batch in one write, all or nothing under the capacity, in order', async () => {
    expect(await triggerManyAllOrNothing(rt, fixture)).toEqual({
      full: 'QUEUE_FULL',
      tailUnchanged: true,
      queuedAfterFull: 2,
      seqs: [2, 3, 4],
      delivered: [0, 1, 2, 3, 4].map((n) => [n, { n }, 1]),
    })
  })

  it('triggerMany refuses bad input and oversized batches, storing nothing', async () => {
    expect(await batchInputRefused(rt, fixture)).toEqual({
      empty: [],
      badEvent: 'INVALID_EVENT',
      notArray: 'INVALID_EVENT',
      oversizedEvent: 'EVENT_TOO_LARGE',
      tooMany: 'EVENT_TOO_LARGE',
      next: 0,
      stats: { events: 0, writes: 0, lostRounds: 0 },
    })
  })

  it('overlapping triggers on one handle go in at most two writes, numbered in call order', async () => {
    const { seqs, stats, delivered } = await overlappingTriggers(rt, fixture)
    const order = Array.from({ length: 16 }, (_, i) => i)
    expect(seqs).toEqual(order)
    expect(delivered).toEqual(order.map((i) => ({ i })))
    expect(stats.events).toBe(16)
    expect(stats.lostRounds).toBe(0)
    expect(stats.writes).toBeLessThanOrEqual(2)
  })

  it('ackAndClaim keeps the delivery lease from event to event, fenced like a claim', async () => {
    expect(await keptLeaseChain(rt, fixture)).toEqual({
      seen: [0, 1, 2, 3, 4].map((n) => [n, { n }, 1]),
      tokens: 1,
      calls: { acquireLease: 1, releaseLease: 1 },
      staleAck: 'LEASE_LOST',
      staleChain: 'LEASE_LOST',
      lastAgain: 'LEASE_LOST',
      counts: { head: 5, next: 5, queuedCount: 0, iterations: 5, headAttempts: 0 },
    })
  })

  it('a kept lease is fenced by its token: a stale consumer under the same holder name is refused', async () => {
    expect(await staleTokenSameHolder(rt, fixture)).toEqual({
      newerToken: true,
      staleChain: 'LEASE_LOST',
      staleAck: 'LEASE_LOST',
      headUnchanged: true,
      fresh: [0, 2],
      next: [1, 1, true],
    })
  })
})
