/**
 * Host-directory `watchPaths` (docs/runtime/wakes.md, Daemon wakes) as
 * scenarios that return what they saw (plain data): host-path-watch.test.ts
 * expects the correct outcome of each, host-path-watch-mutants.test.ts runs
 * them against deliberately broken runtimes. Real files in a temporary
 * directory, the real dispatcher, the memory and filesystem backends with a
 * manual clock (so a path wake stays pending until the scenario advances
 * it); the watch itself runs on real time, so the scenarios wait for its
 * rescans, never for a fixed time.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Backend, ManualClock } from '@agent-state/core'
import type { DaemonPathWatch } from '../src/index.js'
import type { Runtime } from './mutants.js'
import { type WakeBackendKind, type WakeStorage, waitUntil, withStorage } from './wake-scenarios.js'

/** Two more rescans than now: the second started after everything done before this call. */
async function settled(watch: DaemonPathWatch): Promise<void> {
  const target = watch.listings + 2
  if (!(await waitUntil(() => watch.listings >= target))) throw new Error('the watch stalled')
}

/** Runs `body` with a fresh temporary directory, removed afterwards. */
async function withHostDir<T>(body: (root: string) => Promise<T>): Promise<T> {
  const root = await mkdtemp(join(tmpdir(), 'agent-state-host-watch-'))
  try {
    return await body(root)
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

interface QueuedEvent {
  readonly kind?: string
  readonly path?: string
  readonly paths?: readonly string[]
  readonly morePaths?: number
}

async function queued(daemon: { queue: { peek(limit: number): Promise<{ event: unknown }[]> } }) {
  return (await daemon.queue.peek(1000)).map((record) => record.event as QueuedEvent)
}

async function pathWakePending(runtime: Runtime, backend: Backend, daemonId: string) {
  return ((await runtime.readDaemonWakes(backend, daemonId))?.pathWakeId ?? null) !== null
}

/**
 * A daemon spawned over `storage` watching `watchPaths`, its path watch
 * (rescans every `pollMs`, path wakes due 1 s after a change on the manual
 * clock) and a dispatcher with the built-in daemon handler (ticked by hand).
 */
async function watchedDaemon(
  runtime: Runtime,
  storage: WakeStorage,
  clock: ManualClock,
  daemonId: string,
  watchPaths: string[],
  pollMs: number,
) {
  const backend = storage.open()
  const daemon = await runtime.spawnDaemon(backend, {
    daemonId,
    watchPaths,
    clock: clock.now,
    leaseTtlMs: 3_600_000,
  })
  const watch = await runtime.watchDaemonPaths(backend, daemonId, {
    clock: clock.now,
    pollMs,
    debounceMs: 1000,
    settleMs: 10,
  })
  const dispatcher = runtime.startWakeDispatcher(backend, {
    handlers: {},
    daemons: true,
    clock: clock.now,
    intervalMs: null,
  })
  const stop = async () => {
    await dispatcher.stop()
    await watch.stop()
  }
  const pending = () => pathWakePending(runtime, backend, daemonId)
  // Delivers path wakes until a rescan after the delivery leaves none pending
  // (a change seen in two rescans may take two wakes).
  const deliverAll = async () => {
    for (let round = 0; round < 5 && (await pending()); round++) {
      clock.advance(1000)
      await dispatcher.tick()
      await settled(watch)
    }
  }
  return { backend, daemon, watch, pending, deliverAll, stop }
}

/** What {@link hostBurst} saw. */
export interface BurstOutcome {
  /** `path_changed` events enqueued (each one dispatcher wake). */
  readonly events: number
  /** Paths named by the first and by the last event. */
  readonly firstPaths: number
  readonly lastPaths: number
  /** Files of the 100 that no event names. */
  readonly missing: number
  /** Paths counted in `morePaths` instead of named (the 8 KiB cap). */
  readonly morePaths: number
  readonly pathWakeLeft: boolean
}

/**
 * A daemon watching a host directory (`file:///…`) with a 50 ms rescan: one
 * file written registers a path wake (due in 1 s on the manual clock); 99
 * more written in a burst while it is pending are coalesced; the scenario
 * then delivers path wakes until none is pending. The last event must name
 * every coalesced file.
 */
export async function hostBurst(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock) =>
    withHostDir(async (root): Promise<BurstOutcome> => {
      const dir = join(root, 'src')
      await mkdir(dir)
      const { daemon, watch, pending, deliverAll, stop } = await watchedDaemon(
        runtime,
        storage,
        clock,
        'host-burst',
        [pathToFileURL(dir).href],
        50,
      )
      const files = Array.from({ length: 100 }, (_, index) =>
        join(dir, `f-${String(index).padStart(3, '0')}.txt`),
      )
      try {
        await watch.ready
        await writeFile(files[0] as string, 'first')
        if (!(await waitUntil(pending))) throw new Error('the first write woke nothing')
        await Promise.all(files.slice(1).map((file, index) => writeFile(file, `${index}`)))
        await settled(watch)
        await deliverAll()
        const events = (await queued(daemon)).filter((event) => event.kind === 'path_changed')
        const named = new Set(events.flatMap((event) => event.paths ?? []))
        return {
          events: events.length,
          firstPaths: events[0]?.paths?.length ?? 0,
          lastPaths: events.at(-1)?.paths?.length ?? 0,
          missing: files.filter((file) => !named.has(pathToFileURL(file).href)).length,
          morePaths: events.reduce((sum, event) => sum + (event.morePaths ?? 0), 0),
          pathWakeLeft: await pending(),
        }
      } finally {
        await stop()
      }
    }),
  )
}

/** What {@link hostRemoval} saw. */
export interface RemovalOutcome {
  /** `path_removed` events per watched entry (`kept`, `missing`) after each step. */
  readonly atStart: readonly [number, number]
  readonly afterRemove: readonly [number, number]
  /** The removed directory's files named by the path wake delivered after the removal. */
  readonly removedFiles: readonly string[]
  /** After two more rescans: the removal is reported once, not per rescan. */
  readonly afterRescans: readonly [number, number]
  /** The file named by the path wake after the directory reappeared. */
  readonly reappeared: readonly string[]
  /** After the directory was replaced by a file: a second disappearance, reported again. */
  readonly afterReplaced: readonly [number, number]
  readonly warnings: readonly string[]
}

/**
 * A daemon watching two host directories, `kept` (with two files, one in a
 * subdirectory) and `missing` (never created): the missing one is reported
 * at start; removing `kept` is reported once and its files are a path
 * change; the watch keeps looking and a recreated `kept` is a path change
 * naming its new file; `kept` replaced by a plain file is reported again.
 */
export async function hostRemoval(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock) =>
    withHostDir(async (root): Promise<RemovalOutcome> => {
      const kept = join(root, 'kept')
      await mkdir(join(kept, 'sub'), { recursive: true })
      await writeFile(join(kept, 'a.txt'), 'a')
      await writeFile(join(kept, 'sub', 'b.txt'), 'b')
      const entries = [pathToFileURL(kept).href, pathToFileURL(join(root, 'missing')).href]
      const { daemon, watch, deliverAll, stop } = await watchedDaemon(
        runtime,
        storage,
        clock,
        'host-removal',
        entries,
        50,
      )
      const removals = async () => {
        const events = await queued(daemon)
        return entries.map(
          (entry) =>
            events.filter((event) => event.kind === 'path_removed' && event.path === entry).length,
        ) as [number, number]
      }
      const relative = (url: string) => url.slice(pathToFileURL(root).href.length + 1)
      // Delivers the pending path wakes; returns the paths their events name.
      const deliver = async () => {
        const before = (await queued(daemon)).length
        await deliverAll()
        const fresh = (await queued(daemon)).slice(before)
        return fresh.flatMap((event) => (event.paths ?? []).map(relative)).sort()
      }
      try {
        await watch.ready
        const atStart = await removals()
        await rm(kept, { recursive: true })
        await settled(watch)
        const afterRemove = await removals()
        const removedFiles = await deliver()
        await settled(watch)
        const afterRescans = await removals()
        await mkdir(kept)
        await writeFile(join(kept, 'c.txt'), 'c')
        await settled(watch)
        const reappeared = await deliver()
        await rm(kept, { recursive: true })
        await writeFile(kept, 'now a file')
        await settled(watch)
        return {
          atStart,
          afterRemove,
          removedFiles,
          afterRescans,
          reappeared,
          afterReplaced: await removals(),
          warnings: [...watch.warnings],
        }
      } finally {
        await stop()
      }
    }),
  )
}

/** The validation codes of host-directory `watchPaths` entries at spawn, `null` where accepted. */
export async function hostPathValidation(runtime: Runtime, kind: WakeBackendKind) {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    let daemons = 0
    const codeOf = async (watchPaths: string[]) => {
      try {
        await runtime.spawnDaemon(backend, {
          daemonId: `v${daemons++}`,
          watchPaths,
          clock: clock.now,
        })
        return null
      } catch (error) {
        const { code, context } = error as { code?: string; context?: { path?: string } }
        return `${code}:${context?.path ?? ''}`
      }
    }
    return {
      absolutePath: await codeOf(['/srv/app/src']),
      relativePath: await codeOf(['./src']),
      parentPath: await codeOf(['../src']),
      home: await codeOf(['~/src']),
      fileHost: await codeOf(['file://src/']),
      fileRelative: await codeOf(['file:src/']),
      fileQuery: await codeOf(['file:///srv/src?x=1']),
      keyPrefix: await codeOf(['src/']),
      fileUrl: await codeOf(['file:///srv/app/src']),
    }
  })
}

/**
 * A host-directory watch with a one-hour rescan: a file written two levels
 * down must register a path wake within `windowMs` (only the recursive
 * `fs.watch` notification can do that in time).
 */
export async function hostNotified(runtime: Runtime, kind: WakeBackendKind, windowMs: number) {
  return withStorage(kind, async (storage, clock) =>
    withHostDir(async (root) => {
      const dir = join(root, 'src')
      await mkdir(join(dir, 'a', 'b'), { recursive: true })
      const { watch, pending, stop } = await watchedDaemon(
        runtime,
        storage,
        clock,
        'host-notified',
        [pathToFileURL(dir).href],
        3_600_000,
      )
      try {
        await watch.ready
        await writeFile(join(dir, 'a', 'b', 'deep.txt'), 'deep')
        const woken = await waitUntil(pending, windowMs)
        return { woken, warnings: [...watch.warnings] }
      } finally {
        await stop()
      }
    }),
  )
}
