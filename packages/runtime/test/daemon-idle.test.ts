import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { BACKENDS, type BackendFactory, type BackendFixture } from './backends.js'
import {
  ackFailsAfterCheckpoint,
  checkpointFails,
  checkpointRefusedAfterTakeover,
  IDLE_BACKENDS,
  idleThenAck,
  takeoverDuringIdle,
} from './daemon-idle-scenarios.js'

/** Runs `body` on a fresh fixture of `factory` (tests here run concurrently: no shared fixture). */
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

const factories = BACKENDS.filter((factory) => IDLE_BACKENDS.includes(factory.name))

it('runs on every backend the idle bug was reproduced on', () => {
  expect(factories.map((factory) => factory.name).sort()).toEqual([...IDLE_BACKENDS].sort())
})

// Mostly waiting for leases to lapse: the scenarios run side by side.
describe.concurrent.each(factories)('a daemon that idles on $name', (factory) => {
  it('idles past its lease TTL, then takes the event and stores its turn (the reproduction)', async () => {
    const outcome = await onFixture(factory, (fixture) => idleThenAck(runtime, fixture))
    expect(outcome).toMatchObject({
      turn: [0, 1],
      ack: 'resolved',
      counts: { head: 1, next: 1, queuedCount: 0, iterations: 1 },
      stored: { handled: ['e1'] },
      after: null,
    })
    // It took its lapsed lease again: recorded, not silent.
    expect(outcome.audit).toContain('lease_retaken')
  })

  it('taken over while idle: refuses to claim, stores nothing; the new owner gets the event', async () => {
    const outcome = await onFixture(factory, (fixture) => takeoverDuringIdle(runtime, fixture))
    expect(outcome).toEqual({
      refused: 'LEASE_LOST',
      stopRefused: 'LEASE_LOST',
      countsAfterRefusal: { head: 0, next: 1, queuedCount: 1, iterations: 0, headAttempts: 0 },
      storedBefore: { handled: [] },
      ownerTurn: [0, 1],
      stored: { handled: ['e1'], by: 'b' },
      counts: { head: 1, next: 1, queuedCount: 0, iterations: 1, headAttempts: 0 },
    })
  })

  it('taken over mid-turn: the late ack stores nothing and acknowledges nothing', async () => {
    const outcome = await onFixture(factory, (fixture) =>
      checkpointRefusedAfterTakeover(runtime, fixture),
    )
    expect(outcome).toEqual({
      ack: 'LEASE_LOST',
      head: 0,
      stored: { handled: [] },
      redelivered: [0, 2],
    })
  })

  it('the checkpoint fails: neither acknowledged nor stored, and the event comes again', async () => {
    const outcome = await onFixture(factory, (fixture) => checkpointFails(runtime, fixture))
    expect(outcome).toEqual({
      refused: 1,
      ack: 'UNAVAILABLE',
      head: 0,
      stored: { handled: [] },
      redelivered: [0, 2],
      retried: 'resolved',
      finalStored: { handled: ['e1'] },
      finalCounts: { head: 1, next: 1, queuedCount: 0, iterations: 1, headAttempts: 0 },
    })
  })

  it.each(['sameHandle', 'newOwner'] as const)(
    'the head write fails after the checkpoint: the turn stands, the event is not handed out again (%s)',
    async (recovery) => {
      const outcome = await onFixture(factory, (fixture) =>
        ackFailsAfterCheckpoint(runtime, fixture, recovery),
      )
      expect(outcome).toMatchObject({
        refused: 1,
        ack: 'resolved',
        // The head write did not land...
        headAfterAck: 0,
        // ...but the decision did: the state with the event's sequence number.
        stored: { app: { handled: ['e1'] }, daemon: { decidedSeq: 0, queuedEventCount: 1 } },
        iterationsCompleted: 1,
        // The next claim finishes the acknowledgement of e1 and hands out e2.
        next: { turn: [1, 1], event: { id: 'e2' } },
        countsAtNext: { head: 1, next: 2, iterations: 1 },
      })
    },
  )
})
