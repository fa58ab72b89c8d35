/**
 * Hinted wakes at their due time. Node runs a timer once the event loop's
 * millisecond clock (truncated) has reached the timer's start plus its
 * delay, so it may run up to a millisecond before that delay has passed on
 * `Date.now()` or `performance.now()`. A dispatcher that armed a plain
 * `setTimeout` for a hinted wake's due time then often ticked a millisecond
 * early, found the wake not due, and slept for its interval: the wake was
 * late by the interval (an hour here; 1 s by default). That is what the
 * notified-ticks check of wake-dispatcher.test.ts caught now and then on
 * memory. The deadline timer (src/wake/deadline-timer.ts) re-arms a timer
 * that ran early. And its mutant, a plain `setTimeout`, which this check
 * catches (in measured runs the first or second wake already waited).
 */
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { afterEach, describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import type * as DeadlineTimerModule from '../src/wake/deadline-timer.js'
import { mutated, type Runtime, unmockAll } from './mutants.js'
import { waitUntil } from './wake-scenarios.js'

afterEach(unmockAll)

/** Wakes registered one after the other, each due {@link DUE_IN_MS} after its registration. */
const ROUNDS = 25
const DUE_IN_MS = 30

/** What the hinted-wake rounds saw. */
interface HintedRoundsOutcome {
  /** Rounds whose wake reached its handler within 3 s of its due time (the interval is one hour), up to the first that did not. */
  readonly handled: number
  /** Of those, the ones whose handler ran before the wake was due: none may. */
  readonly early: number
}

/**
 * A notified dispatcher on memory (interval one hour, the default clock,
 * `Date.now`), and {@link ROUNDS} wakes registered one after the other by
 * another instance, each due 30 ms later: each is handled by the tick its
 * hint arms for its due time. Stops at the first wake not handled within
 * 3 s.
 */
async function hintedRounds(rt: Runtime): Promise<HintedRoundsOutcome> {
  const store = createMemoryStore()
  const backend = createMemoryBackend({ store, namespace: 'wakes' })
  const registrant = createMemoryBackend({ store, namespace: 'wakes' })
  const handledAt = new Map<string, number>()
  const dispatcher = rt.startWakeDispatcher(backend, {
    handlers: {
      timeout: async (wake) => {
        handledAt.set(wake.id, Date.now())
      },
    },
    intervalMs: 3_600_000,
  })
  let handled = 0
  let early = 0
  try {
    await dispatcher.ready
    for (let round = 0; round < ROUNDS; round++) {
      const wake = await rt.registerWake(registrant, {
        target: { kind: 'worker', workerId: `round${round}` },
        cause: 'timeout',
        dueAt: Date.now() + DUE_IN_MS,
      })
      if (!(await waitUntil(() => handledAt.has(wake.id), DUE_IN_MS + 3_000))) break
      handled++
      if ((handledAt.get(wake.id) ?? 0) < wake.dueAt) early++
    }
  } finally {
    await dispatcher.stop()
  }
  return { handled, early }
}

describe('wakes armed by their hints', () => {
  it('each ticks at the wake’s due time, never before it and not at the interval', async () => {
    expect(await hintedRounds(runtime)).toEqual({ handled: ROUNDS, early: 0 })
  })
})

describe('deadline-timer mutant', () => {
  it('a plain setTimeout: a tick runs a millisecond early, finds nothing due, and that wake waits for the interval', async () => {
    const rt = await mutated(
      '../src/wake/deadline-timer.ts',
      (original) =>
        ({
          ...original,
          startDeadlineTimer: (deadlineMs: number, fire: () => void) => {
            const handle = setTimeout(fire, Math.max(0, deadlineMs - performance.now()))
            handle.unref?.()
            return { clear: () => clearTimeout(handle) }
          },
        }) satisfies Partial<typeof DeadlineTimerModule>,
    )
    const outcome = await hintedRounds(rt)
    console.info(JSON.stringify(outcome))
    expect(outcome.handled).toBeLessThan(ROUNDS)
  })
})
