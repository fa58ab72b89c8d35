/**
 * The checks of daemon-idle.test.ts and daemon-wake.test.ts, run against
 * deliberately broken runtimes: each mutant must make them see the failure
 * they exist to catch. Each mutant replaces one module (vi.doMock) and
 * imports the runtime afresh.
 */

import { afterEach, describe, expect, it } from 'vitest'
import type { Delivery } from '../src/index.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import {
  checkpointFails,
  checkpointRefusedAfterTakeover,
  IDLE_BACKENDS,
  idleThenAck,
} from './daemon-idle-scenarios.js'
import { WAKE_WINDOW_MS, wakeOnNotification } from './daemon-wake-scenarios.js'
import { mutated, unmockAll } from './mutants.js'

const TURN_DECISION = '../src/daemon/turn-decision.ts'
const WORKER = '../src/worker/worker.ts'
const QUEUE_SIGNALS = '../src/daemon/queue-signals.ts'

async function onFixture<T>(
  factory: BackendFactory,
  body: (fixture: BackendFixture) => Promise<T>,
): Promise<T> {
  const fixture = factory.setup()
  try {
    return await body(fixture)
  } finally {
    await fixture.cleanup()
  }
}

afterEach(unmockAll)

/** Mutant: `ack` with an update acknowledges the event first and checkpoints after. */
const ackFirst = () =>
  mutated(TURN_DECISION, (original) => ({
    ...original,
    decideTurn: async (delivery: Delivery, persist: () => Promise<void>) => {
      await delivery.ack()
      await persist()
    },
  }))

const memory = BACKENDS.find((factory) => factory.name === 'memory') as BackendFactory

describe.each(BACKENDS.filter((factory) => IDLE_BACKENDS.includes(factory.name)))(
  'mutant: ack before checkpoint, on $name',
  (factory) => {
    it('a failed checkpoint leaves the event acknowledged and lost, which the check sees', async () => {
      const rt = await ackFirst()
      const outcome = await onFixture(factory, (fixture) => checkpointFails(rt, fixture))
      // daemon-idle.test.ts expects head 0 and the event delivered again as [0, 2].
      expect(outcome).toMatchObject({ ack: 'UNAVAILABLE', head: 1, redelivered: null })
    })
  },
)

describe('mutants on memory', () => {
  it('ack before checkpoint: a late ack after a takeover loses the event, which the check sees', async () => {
    const rt = await ackFirst()
    const outcome = await onFixture(memory, (fixture) =>
      checkpointRefusedAfterTakeover(rt, fixture),
    )
    expect(outcome).toMatchObject({ ack: 'LEASE_LOST', head: 1, redelivered: null })
  })

  it('no reclaim: the reproduction fails with LEASE_LOST again, which the check sees', async () => {
    const rt = await mutated(WORKER, (original) => {
      const Worker = original.Worker as new (...args: never[]) => object
      return {
        ...original,
        Worker: class extends Worker {
          async reclaim(): Promise<void> {}
        },
      }
    })
    const outcome = await onFixture(memory, (fixture) => idleThenAck(rt, fixture))
    expect(outcome.ack).toBe('LEASE_LOST')
    expect(outcome.stored).toEqual({ handled: [] })
  })

  it('notifications ignored: neither waiter wakes within the window daemon-wake.test.ts allows, which the check sees', async () => {
    const rt = await mutated(QUEUE_SIGNALS, (original) => {
      const watch = original.watchQueueChanges as (...args: unknown[]) => boolean
      return {
        ...original,
        // Watches as before, but drops every hint (the end of a watch still counts).
        watchQueueChanges: (
          backend: unknown,
          daemonId: unknown,
          _listener: unknown,
          ...rest: unknown[]
        ) => watch(backend, daemonId, () => undefined, ...rest),
      }
    })
    const outcome = await onFixture(memory, (fixture) =>
      wakeOnNotification(rt, fixture, WAKE_WINDOW_MS),
    )
    expect(outcome).toEqual({
      claimsNotification: true,
      delivered: 'still waiting',
      idled: 'still waiting',
    })
  })
})
