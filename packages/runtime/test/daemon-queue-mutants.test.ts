/**
 * The checks of daemon-queue-batching.test.ts run against deliberately
 * broken runtimes: each mutant must make its check see the failure it exists
 * to catch. Each mutant replaces one module (vi.doMock) and imports the
 * runtime afresh. Memory only: the checks are about the queue's protocol,
 * which every backend runs the same.
 */
import type { Backend, Lease } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { DaemonQueue } from '../src/index.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import {
  batchInputRefused,
  keptLeaseChain,
  overlappingTriggers,
  staleTokenSameHolder,
  triggerManyAllOrNothing,
} from './daemon-queue-scenarios.js'
import { mutated, unmockAll } from './mutants.js'

const DAEMON_QUEUE = '../src/daemon/daemon-queue.ts'
const DELIVERY_LEASE = '../src/daemon/delivery-lease.ts'

const memory = BACKENDS.find((factory) => factory.name === 'memory') as BackendFactory

async function onMemory<T>(body: (fixture: BackendFixture) => Promise<T>): Promise<T> {
  const fixture = memory.setup()
  try {
    return await body(fixture)
  } finally {
    await fixture.cleanup()
  }
}

/** A runtime whose new queues get `patch` applied to each handle. */
const patchedQueues = (patch: (queue: DaemonQueue) => void) =>
  mutated(DAEMON_QUEUE, (original) => {
    const create = original.createDaemonQueue as (...args: unknown[]) => Promise<DaemonQueue>
    return {
      ...original,
      createDaemonQueue: async (...args: unknown[]) => {
        const queue = await create(...args)
        patch(queue)
        return queue
      },
    }
  })

afterEach(unmockAll)

describe('daemon queue mutants on memory', () => {
  it('triggerMany as a loop of triggers stores the part that fits, which the check sees', async () => {
    const rt = await patchedQueues((queue) => {
      queue.triggerMany = async (events) => {
        const seqs: number[] = []
        for (const event of events) seqs.push(await queue.trigger(event))
        return seqs
      }
    })
    const outcome = await onMemory((fixture) => triggerManyAllOrNothing(rt, fixture))
    // The check expects QUEUE_FULL with the tail untouched and 2 queued.
    expect(outcome).toMatchObject({ full: 'QUEUE_FULL', tailUnchanged: false, queuedAfterFull: 5 })
  })

  it('a triggerMany that splits a large batch into writes stores it in parts, which the check sees', async () => {
    const rt = await patchedQueues((queue) => {
      const whole = queue.triggerMany.bind(queue)
      queue.triggerMany = async (events) => {
        const seqs: number[] = []
        for (let at = 0; at < events.length; at += 16) {
          seqs.push(...(await whole(events.slice(at, at + 16))))
        }
        return seqs
      }
    })
    const outcome = await onMemory((fixture) => batchInputRefused(rt, fixture))
    // The check expects EVENT_TOO_LARGE and nothing stored.
    expect(outcome.tooMany).toBe('resolved')
    expect(outcome.next).toBe(rt.MAX_BATCH_EVENTS + 1)
  })

  it('one write per trigger (nothing combined) takes 16 writes, which the check sees', async () => {
    const rt = await patchedQueues((queue) => {
      queue.trigger = async (event) => {
        const [seq] = await queue.triggerMany([event])
        return seq as number
      }
    })
    const { stats } = await onMemory((fixture) => overlappingTriggers(rt, fixture))
    // The check expects at most 2 writes.
    expect(stats.writes).toBe(16)
  })

  it('release and re-acquire instead of keeping the lease, which the check sees', async () => {
    const rt = await mutated(DELIVERY_LEASE, (original) => ({
      ...original,
      keepDeliveryLease: async (backend: Backend, lease: Lease) => {
        await backend.releaseLease(lease)
        return backend.acquireLease(lease.key, { holder: lease.holder, ttlMs: lease.ttlMs })
      },
    }))
    const outcome = await onMemory((fixture) => keptLeaseChain(rt, fixture))
    // The check expects one token and one acquisition for the whole chain: here the claim's
    // and one per kept lease (the last before the queue ran empty), a token per delivery.
    expect(outcome.tokens).toBe(5)
    expect(outcome.calls.acquireLease).toBe(6)
  })

  it('a kept lease fenced by holder name lets the stale consumer ack, which the check sees', async () => {
    const rt = await mutated(DELIVERY_LEASE, (original) => ({
      ...original,
      // The bug: a lost lease whose live successor has the same holder name is taken as ours.
      keepDeliveryLease: async (backend: Backend, lease: Lease) => {
        try {
          return await backend.renewLease(lease)
        } catch (error) {
          const live = await backend.getLease(lease.key)
          if (live !== null && live.holder === lease.holder) return live
          throw error
        }
      },
    }))
    const outcome = await onMemory((fixture) => staleTokenSameHolder(rt, fixture))
    // The check expects LEASE_LOST for the stale chain and the head record untouched.
    expect(outcome).toMatchObject({
      newerToken: true,
      staleChain: 'resolved',
      headUnchanged: false,
    })
  })
})
