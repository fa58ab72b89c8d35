import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import { WAKE_WINDOW_MS, wakeOnNotification } from './daemon-wake-scenarios.js'
import { codeOf } from './error-code.js'
import { sleep } from './queue-helpers.js'

/** The backends with change notification today (docs/runtime/daemons.md, Waiting). */
const NOTIFYING = ['memory', 'fs', 'sqlite', 'redis', 'postgres']

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

describe('the notifying backends of these tests', () => {
  it('are exactly the backends that claim change notification', async () => {
    const claimed: string[] = []
    for (const factory of BACKENDS) {
      await onFixture(factory, async (fixture) => {
        const backend = fixture.create()
        if (backend.capabilities.changeNotification !== undefined) claimed.push(factory.name)
      })
    }
    expect(claimed.sort()).toEqual([...NOTIFYING].sort())
  })
})

describe.concurrent.each(BACKENDS.filter((factory) => NOTIFYING.includes(factory.name)))(
  'waiters on $name wake on its change notification',
  (factory) => {
    it('next({ waitMs }) and waitForIdle wake on a change made by another instance, long before their poll', async () => {
      const outcome = await onFixture(factory, (fixture) =>
        wakeOnNotification(runtime, fixture, WAKE_WINDOW_MS),
      )
      expect(outcome).toEqual({
        claimsNotification: true,
        delivered: { seq: 0, event: { id: 'e1' } },
        idled: { totalIterations: 1 },
      })
    })
  },
)

describe.concurrent.each(BACKENDS)('next({ waitMs }) on $name', (factory) => {
  it('waits for an event from another instance (by notification or by polling) and times out with null', async () => {
    await onFixture(factory, async (fixture) => {
      const daemon = await runtime.spawnDaemon(fixture.create(), { daemonId: 'consumer' })
      const started = Date.now()
      expect(await daemon.next({ waitMs: 100 })).toBeNull()
      expect(Date.now() - started).toBeGreaterThanOrEqual(100)
      const producer = await runtime.openDaemonQueue(fixture.create(), 'consumer')
      const waiting = daemon.next({ waitMs: 60_000 })
      await sleep(50)
      await producer.trigger({ id: 'e1' })
      const turn = await waiting
      expect([turn?.seq, turn?.event]).toEqual([0, { id: 'e1' }])
      // One at a time, as without waitMs; bad options are refused before anything is read.
      expect(await codeOf(daemon.next({ waitMs: 10 }))).toBe('DELIVERY_IN_FLIGHT')
      if (turn !== null) await daemon.ack(turn)
      expect(await codeOf(daemon.next({ waitMs: -1 }))).toBe('INVALID_QUEUE_OPTIONS')
      const aborts = new AbortController()
      const aborted = daemon.next({ waitMs: 60_000, signal: aborts.signal })
      aborts.abort()
      expect(await aborted).toBeNull()
    })
  })

  it("waits out another consumer's delivery, which gives no change hint when it is released", async () => {
    await onFixture(factory, async (fixture) => {
      const daemon = await runtime.spawnDaemon(fixture.create(), { daemonId: 'shared' })
      await daemon.trigger({ id: 'e1' })
      const other = await runtime.openDaemonQueue(fixture.create(), 'shared')
      const held = await other.claim({ holder: 'other' })
      expect(await codeOf(daemon.next())).toBe('DELIVERY_IN_FLIGHT')
      const waiting = daemon.next({ waitMs: 60_000 })
      await sleep(50)
      await held?.release()
      const turn = await waiting
      expect([turn?.seq, turn?.attempt]).toEqual([0, 2])
    })
  })
})
