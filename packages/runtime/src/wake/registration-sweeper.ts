import type { Backend } from '@agent-state/core'
import { type SweepWakeRegistrationsResult, sweepWakeRegistrations } from './wake-sweep.js'

/**
 * The dispatcher's slow sweep of interrupted registrations (its `sweep`
 * option, docs/runtime/wakes.md, Cancel and registration): one page of
 * `sweepWakeRegistrations` every `periodMs`, going on from the previous
 * page's cursor and starting over after the last, so a registration a crash
 * interrupted is completed without an operator, at a bounded cost per
 * period whatever the number of records.
 */

/** What the last sweep round came to: its result, or the error that stopped it (retried next period). */
export type SweepRound = SweepWakeRegistrationsResult | { readonly error: unknown }

/** A running sweeper. */
export interface RegistrationSweeper {
  /** Rounds run so far. */
  readonly rounds: number
  /** The last round's result or error, `null` before the first. */
  readonly last: SweepRound | null
  /** Stops the timer and waits for the round in progress. Idempotent. */
  stop(): Promise<void>
}

/**
 * Starts the sweeps: the first `periodMs` after the start, then one per
 * `periodMs` after each round ends. `null` options (the dispatcher's
 * `sweep: null`): no sweeper.
 */
export function startRegistrationSweeper(
  backend: Backend,
  options: { readonly periodMs: number; readonly limit: number } | null,
): RegistrationSweeper | null {
  if (options === null) return null
  let rounds = 0
  let last: SweepRound | null = null
  let cursor: string | undefined
  let stopped = false
  let timer: NodeJS.Timeout | undefined
  let running: Promise<void> = Promise.resolve()

  const round = async (): Promise<void> => {
    try {
      const result = await sweepWakeRegistrations(backend, {
        limit: options.limit,
        ...(cursor === undefined ? {} : { cursor }),
      })
      // Absent after the last page: the next round starts over.
      cursor = result.cursor
      last = result
    } catch (error) {
      // The same page again next period.
      last = { error }
    }
    rounds++
  }
  const arm = (): void => {
    if (stopped) return
    timer = setTimeout(() => {
      running = round().then(arm)
    }, options.periodMs)
    // Maintenance never keeps a process alive by itself.
    timer.unref?.()
  }
  arm()
  return {
    get rounds() {
      return rounds
    },
    get last() {
      return last
    },
    async stop() {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      await running
    },
  }
}
