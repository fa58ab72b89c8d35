/**
 * A burst of due wakes on SQLite costs about one listed key per wake at
 * 100 and at 2,000 wakes (wake-burst-scenario.ts): the dispatcher closes
 * SQLite's polling watch while a tick fires, instead of having the backend
 * list every pending marker after each of its commits. The mutant in
 * wake-burst-mutant.test.ts keeps the watch open and must fail this check.
 * A wake registered while the watch is closed is still handled soon; the
 * mutant that never opens the watch again must fail that check.
 */
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { burstListing, LISTED_PER_WAKE, lateDuringBurst } from './wake-burst-scenario.js'

describe('a burst of due wakes on SQLite', () => {
  it.each([100, 2_000])(
    '%i wakes due at once: all fired, about one listed key per wake (no relisting of the pending markers per poll)',
    async (wakes) => {
      const outcome = await burstListing(runtime, wakes, { listedBudgetPerWake: 20 })
      console.info(JSON.stringify(outcome))
      expect(outcome).toMatchObject({ wakes, handled: wakes, overBudget: false })
      expect(outcome.listedPerWake).toBeLessThanOrEqual(LISTED_PER_WAKE)
    },
    120_000,
  )

  it('a wake registered while the burst fires (the watch closed) is still handled soon, long before the one-hour interval', async () => {
    expect(await lateDuringBurst(runtime)).toEqual({
      notified: true,
      lateRegistered: true,
      lateHandled: true,
    })
  }, 30_000)
})
