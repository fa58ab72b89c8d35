/**
 * The check of wake-burst.test.ts against a dispatcher that keeps SQLite's
 * polling watch open while it fires (its timer's `busy` does nothing, as
 * before the fix): the backend lists every pending marker after each of the
 * dispatcher's commits, so at 2,000 wakes the listed keys per wake pass the
 * bound (the scenario stops at 20 per wake rather than list for minutes).
 * And one whose closed watch is never opened again, nor the next tick
 * brought forward after a firing tick: a wake registered during the burst
 * waits for the one-hour interval.
 */
import { afterEach, describe, expect, it } from 'vitest'
import type * as TickTimer from '../src/wake/tick-timer.js'
import { mutated, unmockAll } from './mutants.js'
import { burstListing, LISTED_PER_WAKE, lateDuringBurst } from './wake-burst-scenario.js'

afterEach(unmockAll)

/** The runtime whose tick timer has `busy` or `settled` replaced by a no-op. */
function timerWithout(member: 'busy' | 'settled') {
  return mutated('../src/wake/tick-timer.ts', (original) => {
    const { startTickTimer } = original as typeof TickTimer
    return {
      ...original,
      startTickTimer: (...args: Parameters<typeof startTickTimer>): TickTimer.TickTimer => {
        const timer = startTickTimer(...args)
        return {
          get notified() {
            return timer.notified
          },
          ready: timer.ready,
          busy: () => timer.busy(),
          settled: () => timer.settled(),
          stop: () => timer.stop(),
          [member]: () => undefined,
        }
      },
    }
  })
}

describe('a dispatcher that keeps its polling watch open while it fires', () => {
  it('lists the pending markers again per poll: more listed keys per wake than the bound at 2,000 wakes', async () => {
    const rt = await timerWithout('busy')
    const outcome = await burstListing(rt, 2_000, { listedBudgetPerWake: 20 })
    console.info(JSON.stringify(outcome))
    expect(outcome.listedPerWake).toBeGreaterThan(LISTED_PER_WAKE)
  }, 120_000)

  it('never opened again after a burst (and no early tick after a firing one): a wake registered while the burst fires waits for the interval', async () => {
    const rt = await timerWithout('settled')
    expect(await lateDuringBurst(rt)).toEqual({
      notified: true,
      lateRegistered: true,
      lateHandled: false,
    })
  }, 30_000)
})
