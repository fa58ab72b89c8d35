/**
 * The checks of daemon-kept-lease.test.ts run against deliberately broken
 * runtimes: each mutant must make its check see the failure it exists to
 * catch. Each mutant replaces one module (vi.doMock) and imports the runtime
 * afresh. Memory only: the checks are about the daemon's protocol, which
 * every backend runs the same.
 */
import type { Backend, Lease } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import {
  daemonTriggerMany,
  keptLeaseLoop,
  staleKeptSameHolder,
  stopWithKept,
  takeoverWithKept,
} from './daemon-kept-lease-scenarios.js'
import { mutated, unmockAll } from './mutants.js'

const DAEMON = '../src/daemon/daemon.ts'
const DELIVERY = '../src/daemon/delivery.ts'
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

interface DeliveryPrototype {
  ack(): Promise<void>
  ackAndClaim(): Promise<unknown>
  release(): Promise<void>
  releaseUnseen(): Promise<void>
}

/** A runtime whose `Delivery` class (a fresh copy of the module) gets `patch` on its prototype. */
const patchedDelivery = (patch: (prototype: DeliveryPrototype) => void) =>
  mutated(DELIVERY, (original) => {
    patch((original.Delivery as { prototype: DeliveryPrototype }).prototype)
    return original
  })

afterEach(unmockAll)

describe('daemon kept lease mutants on memory', () => {
  it('a daemon loop that acks and claims afresh per event (the old path), which the check sees', async () => {
    const rt = await patchedDelivery((prototype) => {
      prototype.ackAndClaim = async function (this: DeliveryPrototype) {
        await this.ack()
        return null
      }
    })
    const outcome = await onMemory((fixture) => keptLeaseLoop(rt, fixture, false))
    // The check expects one token, one acquisition and 49 calls for the 8 events.
    expect(outcome).toMatchObject({ tokens: 8, total: 81 })
    expect(outcome.calls).toMatchObject({ acquireLease: 8, releaseLease: 8 })
  })

  it('a kept delivery renewed by holder name is handed out stale, which the check sees', async () => {
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
    const outcome = await onMemory((fixture) => staleKeptSameHolder(rt, fixture))
    // The check expects DELIVERY_IN_FLIGHT: the event is the other consumer's.
    // Here the kept delivery (its own first attempt) goes to the application a second time.
    expect(outcome).toMatchObject({ newerToken: true, taken: [1, 2], staleNext: [1, 1] })
    // The same through daemon.heartbeat(), which renews the kept delivery by holder name too.
    const viaHeartbeat = await onMemory((fixture) => staleKeptSameHolder(rt, fixture, true))
    expect(viaHeartbeat).toMatchObject({ heartbeat: 'resolved', staleNext: [1, 1] })
  })

  it('stop releasing the kept delivery as if handed out counts an attempt, which the check sees', async () => {
    const rt = await patchedDelivery((prototype) => {
      prototype.releaseUnseen = function (this: DeliveryPrototype) {
        return this.release()
      }
    })
    const outcome = await onMemory((fixture) => stopWithKept(rt, fixture))
    // The check expects the kept event back on its first attempt.
    expect(outcome.resumed).toEqual([1, { n: 1 }, 2])
  })
  it('daemon.triggerMany as a loop of triggers stores the part that fits, which the check sees', async () => {
    const rt = await mutated(DAEMON, (original) => {
      const prototype = (original.Daemon as { prototype: Record<string, unknown> }).prototype
      prototype.triggerMany = async function (
        this: { trigger(event: unknown): Promise<number> },
        events: readonly unknown[],
      ) {
        const seqs: number[] = []
        for (const event of events) seqs.push(await this.trigger(event))
        return seqs
      }
      return original
    })
    const outcome = await onMemory((fixture) => daemonTriggerMany(rt, fixture))
    // The check expects QUEUE_FULL with 2 queued and only those taken.
    expect(outcome).toMatchObject({ full: 'QUEUE_FULL', queued: 3 })
    expect(outcome.taken).toEqual([{ n: 0 }, { n: 1 }, { n: 2 }])
  })
  it('a kept event not given back on a takeover blocks the new owner, which the check sees', async () => {
    const rt = await patchedDelivery((prototype) => {
      prototype.releaseUnseen = async () => undefined
    })
    const outcome = await onMemory((fixture) => takeoverWithKept(rt, fixture))
    // The check expects the new owner to get event 1 at once.
    expect(outcome).toEqual({ refused: 'LEASE_LOST', taken: 'DELIVERY_IN_FLIGHT' })
  })
})
