/**
 * A burst of wakes due at once on SQLite, counted in keys listed
 * (docs/runtime/wakes.md, Ticks woken by change notification): SQLite's
 * change notification polls, listing the whole watched prefix again after
 * every commit, so a notified dispatcher that kept watching the due-time
 * index while it fired a burst paid a listing of every pending marker per
 * poll, and 10,000 timers due in one second fired at about 10 a second. The
 * count is every key and group the backend's `list` returned, the
 * dispatcher's ticks and the backend's own watch alike (the watch lists
 * through the instance's `list`), so load does not change what it means:
 * with the watch closed while a tick fires, about one listed key per wake
 * (its marker, met once by the tick) at any burst size.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createSqliteBackend } from '@agent-state/sqlite'
import type { Runtime } from './mutants.js'

/**
 * Listed keys per wake a burst may cost: the tick meets each marker once,
 * plus the bucket groups and the watch's listings after the burst.
 */
export const LISTED_PER_WAKE = 1.5

/** What one burst came to. */
export interface BurstOutcome {
  readonly wakes: number
  /** Wakes whose handler ran, when the scenario ended. */
  readonly handled: number
  /** Keys and groups listed from the dispatcher's start (after its watch's first listing) to the end, per wake. */
  readonly listedPerWake: number
  /** Whether the scenario stopped early because the listing passed {@link BurstOptions.listedBudgetPerWake} per wake. */
  readonly overBudget: boolean
}

/** Knobs of {@link burstListing}. */
export interface BurstOptions {
  /** Listed keys per wake after which the scenario stops early (a broken dispatcher would list for minutes). */
  readonly listedBudgetPerWake: number
}

/**
 * Registers `wakes` timeouts, all due one second ago, on a fresh SQLite
 * database, then starts one notified dispatcher (ticks every 100 ms, no
 * sweep, idle ceiling 1 s) and waits until every wake is handled and the
 * two ticks after the burst ran, or until the listing passes the budget.
 */
export async function burstListing(
  rt: Runtime,
  wakes: number,
  options: BurstOptions,
): Promise<BurstOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-wake-burst-'))
  // NORMAL: the count does not depend on durability, and the test spends less on fsyncs.
  const backend = createSqliteBackend({
    path: join(dir, 'wakes.db'),
    namespace: 'burst',
    synchronous: 'NORMAL',
  })
  let listed = 0
  let counting = false
  const list = backend.list.bind(backend)
  // Replaced on the instance, so the backend's own watch (which lists through it) is counted too.
  backend.list = async (listOptions) => {
    const page = await list(listOptions)
    if (counting) listed += page.entries.length + (page.prefixes?.length ?? 0)
    return page
  }
  try {
    const dueAt = Date.now() - 1_000
    for (let i = 0; i < wakes; i += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, wakes - i) }, (_, j) =>
          rt.registerWake(backend, {
            target: { kind: 'worker', workerId: `w${i + j}` },
            cause: 'timeout',
            dueAt,
          }),
        ),
      )
    }
    let handled = 0
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        timeout: async () => {
          handled++
        },
      },
      intervalMs: 100,
      // An idle dispatcher (a broken one that sleeps with its watch open) still ticks each second.
      idleCeilingMs: 1_000,
      sweep: null,
    })
    await dispatcher.ready
    // The watch's first listing (every marker, once) is done: count from here.
    counting = true
    const budget = options.listedBudgetPerWake * wakes
    let overBudget = false
    let settledTicks = 0
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      if (listed > budget) {
        overBudget = true
        break
      }
      if (handled < wakes) continue
      // Every wake handled: wait two more ticks, the one that meets no due
      // wake (the watch is opened again after it) and the one once the watch
      // is established, so the watch's first listing is counted.
      if (settledTicks === 0) settledTicks = dispatcher.ticks + 2
      if (dispatcher.ticks >= settledTicks) break
    }
    await dispatcher.stop()
    return {
      wakes,
      handled,
      listedPerWake: Math.round((listed / wakes) * 100) / 100,
      overBudget,
    }
  } finally {
    await backend.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** What the late-registration scenario saw. */
export interface LateDuringBurstOutcome {
  /** Whether the dispatcher's ticks were woken by notification before the burst. */
  readonly notified: boolean
  /** Whether the late wake was registered (by another instance, from the burst's first handler). */
  readonly lateRegistered: boolean
  /** Whether it was handled within 5 s. */
  readonly lateHandled: boolean
}

/**
 * A wake registered while a burst fires, so while SQLite's watch is closed:
 * 50 wakes due now, a dispatcher with a one-hour interval (only hints and
 * the re-ticks after a firing tick can fire anything) and one `tick()`
 * started by hand, whose first handler waits until another instance has
 * registered a wake due now. That wake must be handled within 5 s: by the
 * tick that follows a firing tick at the hint delay, not after the hour.
 */
export async function lateDuringBurst(rt: Runtime): Promise<LateDuringBurstOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-wake-late-'))
  const open = () =>
    createSqliteBackend({ path: join(dir, 'wakes.db'), namespace: 'late', synchronous: 'NORMAL' })
  const backend = open()
  const registrant = open()
  const register = (workerId: string, on = backend) =>
    rt.registerWake(on, {
      target: { kind: 'worker', workerId },
      cause: 'timeout',
      dueAt: Date.now(),
    })
  try {
    const burst = await Promise.all(Array.from({ length: 50 }, (_, i) => register(`w${i}`)))
    const first = burst.map((wake) => wake.id).sort()[0]
    const handled = new Set<string>()
    let lateId = ''
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {
        timeout: async (wake) => {
          if (wake.id === first) lateId = (await register('late', registrant)).id
          handled.add(wake.id)
        },
      },
      intervalMs: 3_600_000,
      sweep: null,
    })
    await dispatcher.ready
    const notified = dispatcher.notified
    await dispatcher.tick()
    const deadline = Date.now() + 5_000
    while (!handled.has(lateId) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    await dispatcher.stop()
    return { notified, lateRegistered: lateId !== '', lateHandled: handled.has(lateId) }
  } finally {
    await registrant.close()
    await backend.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
