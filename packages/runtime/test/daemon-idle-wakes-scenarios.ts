/**
 * Daemon idle wakes (docs/runtime/wakes.md, Daemon wakes) as scenarios that
 * return what they saw (plain data): daemon-idle-wakes.test.ts expects the
 * correct outcome of each, daemon-idle-wakes-mutants.test.ts runs them
 * against deliberately broken runtimes. Memory and the filesystem with a
 * manual clock (due times and leases on it); the path watch runs on real
 * time, so its scenarios wait for its listings, never for a fixed time.
 */
import type { Backend } from '@agent-state/core'
import type { FiredWake } from '../src/index.js'
import type { Runtime } from './mutants.js'
import { T0, type WakeBackendKind, waitUntil, withStorage } from './wake-scenarios.js'

const encoder = new TextEncoder()

/** Unfinished wakes: the due-time index holds one marker per pending or undelivered wake. */
async function pendingWakes(backend: Backend): Promise<number> {
  let count = 0
  let cursor: string | undefined
  do {
    const page = await backend.list({
      prefix: 'wakes/due/',
      ...(cursor === undefined ? {} : { cursor }),
    })
    count += page.entries.length
    cursor = page.cursor
  } while (cursor !== undefined)
  return count
}

/** `inner` without change notification: its watchers must poll. */
export function withoutNotification(inner: Backend): Backend {
  const { changeNotification: _dropped, ...capabilities } = inner.capabilities
  return new Proxy(inner, {
    get(target, property) {
      if (property === 'capabilities') return capabilities
      if (property === 'watch') return undefined
      const value = Reflect.get(target, property, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/** What {@link intervalTicks} saw. */
export interface IntervalOutcome {
  /** At 29.999 s: queued events, unfinished wakes. */
  readonly before: { readonly queued: number; readonly pending: number }
  /** The first tick's event is `{ kind: 'interval', wakeId, dueAt }` of the wake it fired. */
  readonly firstEventMatches: boolean
  /** The first wake delivered again after the chain moved on. */
  readonly redelivery: string
  readonly afterRedelivery: { readonly queued: number; readonly pending: number }
  /** At 60, 90 and 120 s, with the 60 s tick never taken: queued events, unfinished wakes. */
  readonly busy: ReadonlyArray<readonly [number, number]>
}

/**
 * A daemon with `wakeIntervalMs: 30 s`: nothing before 30 s; at 30 s one
 * interval event carrying the wake id; the same wake delivered again once
 * the daemon took its tick enqueues nothing; then, the next tick never taken,
 * the queue holds one tick whatever the time and one wake stays pending.
 */
export async function intervalTicks(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock): Promise<IntervalOutcome> => {
    const backend = storage.open()
    const daemon = await runtime.spawnDaemon(backend, {
      daemonId: 'ticker',
      wakeIntervalMs: 30_000,
      clock: clock.now,
      leaseTtlMs: 3_600_000,
    })
    const dispatcher = runtime.startWakeDispatcher(backend, {
      handlers: {},
      daemons: true,
      clock: clock.now,
      intervalMs: null,
    })
    const state = async () => ({
      queued: (await daemon.queue.counts()).queuedCount,
      pending: await pendingWakes(backend),
    })
    try {
      clock.set(T0 + 29_999)
      await dispatcher.tick()
      const before = await state()
      clock.set(T0 + 30_000)
      const first = await dispatcher.tick()
      const wakeId = first.outcomes[0]?.wakeId ?? 'none'
      const delivery = await daemon.next()
      const event = JSON.stringify(delivery?.event)
      if (delivery !== null) await daemon.ack(delivery)
      const fired = (await runtime.getWake(backend, wakeId)) as FiredWake
      const redelivery = await runtime.handleDaemonWake(backend, fired, clock.now)
      const afterRedelivery = await state()
      const busy: Array<readonly [number, number]> = []
      for (const at of [60_000, 90_000, 120_000]) {
        clock.set(T0 + at)
        await dispatcher.tick()
        const now = await state()
        busy.push([now.queued, now.pending])
      }
      return {
        before,
        firstEventMatches:
          event === JSON.stringify({ kind: 'interval', wakeId, dueAt: T0 + 30_000 }),
        redelivery,
        afterRedelivery,
        busy,
      }
    } finally {
      await dispatcher.stop()
    }
  })
}

/** What {@link watchdogTrips} saw. */
export interface WatchdogOutcome {
  /** Per tick at 10, 20, 30, 40 s: missed intervals, watchdog tripped, a next wake pending. */
  readonly ticks: ReadonlyArray<readonly [number, boolean, boolean]>
  readonly queued: number
  /** After `stop` and `resumeDaemon`: watchdog cleared, a next wake pending. */
  readonly rearmed: readonly [boolean, boolean]
}

/**
 * `idleWatchdogAttempts: 2`, nobody taking the ticks: the first tick is
 * enqueued, the next two miss, the second miss trips the watchdog (no next
 * wake), the fourth tick does nothing; resuming the daemon re-arms the chain.
 */
export async function watchdogTrips(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock): Promise<WatchdogOutcome> => {
    const backend = storage.open()
    const daemon = await runtime.spawnDaemon(backend, {
      daemonId: 'sleepy',
      wakeIntervalMs: 10_000,
      idleWatchdogAttempts: 2,
      clock: clock.now,
      leaseTtlMs: 3_600_000,
    })
    const dispatcher = runtime.startWakeDispatcher(backend, {
      handlers: {},
      daemons: true,
      clock: clock.now,
      intervalMs: null,
    })
    try {
      const ticks: Array<readonly [number, boolean, boolean]> = []
      for (const at of [10_000, 20_000, 30_000, 40_000]) {
        clock.set(T0 + at)
        await dispatcher.tick()
        const registration = await runtime.readDaemonWakes(backend, 'sleepy')
        ticks.push([
          registration?.missedIntervals ?? -1,
          registration?.watchdog !== null,
          (await pendingWakes(backend)) > 0,
        ])
      }
      const queued = (await daemon.queue.counts()).queuedCount
      await daemon.stop()
      await runtime.resumeDaemon(backend, 'sleepy', { clock: clock.now, leaseTtlMs: 3_600_000 })
      const registration = await runtime.readDaemonWakes(backend, 'sleepy')
      return {
        ticks,
        queued,
        rearmed: [registration?.watchdog === null, (await pendingWakes(backend)) > 0],
      }
    } finally {
      await dispatcher.stop()
    }
  })
}

/** What {@link pathChanges} saw. */
export interface PathOutcome {
  readonly notified: boolean
  /** Events enqueued after two bursts of 50 writes (the second while the first's wake was pending). */
  readonly afterBursts: number
  /** Each enqueued event's kind, and whether it carries the wake id the dispatcher fired. */
  readonly burstEvent: readonly [string, boolean]
  /** The paths of the event after `inbox/seed` was deleted. */
  readonly deletedPaths: readonly string[]
  readonly pendingLeft: number
}

/**
 * A daemon watching `inbox/` on a backend without change notification (the
 * watch polls every 10 ms): a key written before the watch started wakes
 * nothing; two bursts of 50 writes, the second while the first's path wake is
 * pending, give one event; deleting a key afterwards gives another, naming it.
 */
export async function pathChanges(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock): Promise<PathOutcome> => {
    const backend = withoutNotification(storage.open())
    const daemon = await runtime.spawnDaemon(backend, {
      daemonId: 'watcher',
      watchPaths: ['inbox/'],
      clock: clock.now,
      leaseTtlMs: 3_600_000,
    })
    await backend.put('inbox/seed', encoder.encode('{}'))
    const watch = await runtime.watchDaemonPaths(backend, 'watcher', {
      clock: clock.now,
      pollMs: 10,
      debounceMs: 1000,
    })
    const dispatcher = runtime.startWakeDispatcher(backend, {
      handlers: {},
      daemons: true,
      clock: clock.now,
      intervalMs: null,
    })
    // Two more listings than now: the second started after every write before this call.
    const settled = async () => {
      const target = watch.listings + 2
      if (!(await waitUntil(() => watch.listings >= target))) throw new Error('the watch stalled')
    }
    const burst = (from: number) =>
      Promise.all(
        Array.from({ length: 50 }, (_, index) =>
          backend.put(`inbox/f-${from + index}`, encoder.encode(`${index}`)),
        ),
      )
    try {
      await watch.ready
      await settled()
      await burst(0)
      await settled()
      await burst(50)
      await settled()
      clock.advance(1000)
      const fired = await dispatcher.tick()
      const events = await daemon.queue.peek(100)
      const afterBursts = events.length
      const first = events[0]?.event as { kind?: string; wakeId?: string } | undefined
      const burstEvent = [
        first?.kind ?? 'none',
        first?.wakeId !== undefined && first.wakeId === fired.outcomes[0]?.wakeId,
      ] as const
      for (let delivery = await daemon.next(); delivery !== null; delivery = await daemon.next()) {
        await daemon.ack(delivery)
      }
      await backend.delete('inbox/seed')
      await settled()
      clock.advance(1000)
      await dispatcher.tick()
      const after = await daemon.queue.peek(100)
      const deleted = after[0]?.event as { paths?: string[] } | undefined
      return {
        notified: watch.notified,
        afterBursts,
        burstEvent,
        deletedPaths: deleted?.paths ?? [],
        pendingLeft: await pendingWakes(backend),
      }
    } finally {
      await dispatcher.stop()
      await watch.stop()
    }
  })
}

/**
 * A watch on a backend with change notification and a one-hour poll: one
 * write must register a path wake within `windowMs` (only a notification can
 * do that in time).
 */
export async function notifiedPathChange(
  runtime: Runtime,
  kind: WakeBackendKind,
  windowMs: number,
) {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await runtime.spawnDaemon(backend, {
      daemonId: 'notified',
      watchPaths: ['inbox/'],
      clock: clock.now,
      leaseTtlMs: 3_600_000,
    })
    const watch = await runtime.watchDaemonPaths(backend, 'notified', {
      clock: clock.now,
      pollMs: 3_600_000,
      debounceMs: 0,
    })
    try {
      await watch.ready
      await backend.put('inbox/one', encoder.encode('{}'))
      const woken = await waitUntil(
        async () => (await runtime.readDaemonWakes(backend, 'notified'))?.pathWakeId !== null,
        windowMs,
      )
      return { notified: watch.notified, woken }
    } finally {
      await watch.stop()
    }
  })
}

/** The validation codes of the daemon wake options, `null` where a call was accepted. */
export async function daemonWakeValidation(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const codeOf = async (call: () => Promise<unknown>) => {
      try {
        await call()
        return null
      } catch (error) {
        const { code, context } = error as { code?: string; context?: { path?: string } }
        return `${code}:${context?.path ?? ''}`
      }
    }
    return {
      zeroAttempts: await codeOf(() =>
        runtime.spawnDaemon(backend, {
          daemonId: 'v1',
          wakeIntervalMs: 1000,
          idleWatchdogAttempts: 0,
          clock: clock.now,
        }),
      ),
      noInterval: await codeOf(() =>
        runtime.spawnDaemon(backend, { daemonId: 'v2', idleWatchdogAttempts: 3, clock: clock.now }),
      ),
      noPaths: await codeOf(async () => {
        await runtime.spawnDaemon(backend, { daemonId: 'v3', clock: clock.now })
        await runtime.watchDaemonPaths(backend, 'v3')
      }),
    }
  })
}
