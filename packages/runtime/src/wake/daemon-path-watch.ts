import { type Backend, type Clock, systemClock } from '@agent-state/core'
import { z } from 'zod'
import { openDaemonQueue } from '../daemon/daemon-queue.js'
import { wakeError } from '../shared/errors.js'
import { notePathChange, readDaemonWakes } from './daemon-wakes.js'
import {
  type HostDirScan,
  hostDirNotifier,
  hostDirOf,
  isHostDirEntry,
  keepUnreported,
  scanHostDir,
  watchPathProblem,
} from './host-path-watch.js'
import { diffVersions, openKeyWatch } from './key-watch.js'

/** Options of {@link watchDaemonPaths}; the single source of their types. */
export const watchDaemonPathsOptionsSchema = z.strictObject({
  /** Where due times come from. Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .default(() => systemClock),
  /**
   * Ms between two listings where the backend has no change notification,
   * and between two rescans of each host directory (the safety net for
   * notifications `fs.watch` drops, and how a missing directory is looked
   * for). Default 1000.
   */
  pollMs: z.int().min(10).max(3_600_000).default(1000),
  /** Ms a host directory's `fs.watch` notification waits before its rescan, so a burst is one rescan. Default 20. */
  settleMs: z.int().min(0).max(60_000).default(20),
  /** How long after a change its path wake is due; changes within it coalesce. Default 100 ms. */
  debounceMs: z.int().min(0).max(3_600_000).default(100),
})
/** What {@link watchDaemonPaths} accepts. */
export type WatchDaemonPathsOptions = z.input<typeof watchDaemonPathsOptionsSchema>

/** A running watch of a daemon's `watchPaths`. */
export interface DaemonPathWatch {
  /** Whether the backend's change notification drives it (else bounded polling every `pollMs`). */
  readonly notified: boolean
  /** Listings of the watched paths so far (the baseline included): a diagnostic, and how tests know a listing ran. */
  readonly listings: number
  /** Host-directory problems met so far (`fs.watch` could not open or failed: that directory is polled every `pollMs`). */
  readonly warnings: readonly string[]
  /** Resolves once the baseline listing is taken: changes from then on are seen. */
  readonly ready: Promise<void>
  /** Resolves after `stop()`; rejects with the failure that ended the watch (never a silent stop). */
  readonly done: Promise<void>
  /** Ends the watch. Idempotent. */
  stop(): Promise<void>
}

/** A wait that `poke` cuts short; `poked` says whether something poked since the last `clear`. */
interface Sleeper {
  readonly poked: boolean
  poke(): void
  clear(): void
  sleep(ms: number): Promise<void>
}

function sleeper(signal: AbortSignal): Sleeper {
  let poked = false
  let wake: (() => void) | null = null
  return {
    get poked() {
      return poked
    },
    poke() {
      poked = true
      wake?.()
    },
    clear() {
      poked = false
    },
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        if (poked || signal.aborted) {
          resolve()
          return
        }
        const timer = setTimeout(done, ms)
        signal.addEventListener('abort', done, { once: true })
        function done() {
          clearTimeout(timer)
          signal.removeEventListener('abort', done)
          wake = null
          resolve()
        }
        wake = done
      }),
  }
}

/** An abortable pause of `ms` that nothing else cuts short. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return sleeper(signal).sleep(ms)
}

/**
 * Watches a spawned daemon's `watchPaths` and turns every change under them
 * into a coalesced path wake (`notePathChange`), which a dispatcher with the
 * `daemons` option enqueues into the daemon's queue. Run it in any one
 * process (more are harmless: their path wakes coalesce).
 *
 * Key prefixes: it keeps the keys and versions under each path and lists
 * them again when the backend's change notification (`watch`) hints a
 * change, or every `pollMs` where the backend claims none (or its watch
 * ended).
 *
 * Host directories (`file:///…` entries, on the host this runs on): a
 * recursive `fs.watch` hints a change, and `settleMs` later every directory
 * is rescanned (file names, mtime, size); the rescan also runs every
 * `pollMs`, so a notification `fs.watch` drops is found by the next one. The
 * changed files (as `file:` URLs) are noted; files changed while a path wake
 * is pending are coalesced into it and named again in the next path wake
 * once it is delivered, so the last delivered event names every change. A
 * directory that is missing, removed or replaced by a file is reported once
 * per disappearance by enqueueing `{ kind: 'path_removed', path, at }` into
 * the daemon's queue (its files are noted as changed too); the watch keeps
 * rescanning for it and a reappearance is a path change naming its files.
 *
 * A listing, scan, wake registration or enqueue that fails ends the watch
 * and rejects `done`.
 *
 * @throws `INVALID_WAKE` for invalid options, a daemon with no watched paths
 *   or an invalid entry (a relative or ambiguous host path).
 */
export async function watchDaemonPaths(
  backend: Backend,
  daemonId: string,
  options: WatchDaemonPathsOptions = {},
): Promise<DaemonPathWatch> {
  const parsed = watchDaemonPathsOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const path = parsed.error.issues[0]?.path.join('.') ?? ''
    throw wakeError('INVALID_WAKE', `Invalid path watch option ${path}`, { path }, parsed.error)
  }
  const { clock, pollMs, debounceMs, settleMs } = parsed.data
  const registration = await readDaemonWakes(backend, daemonId)
  if (registration === null || registration.watchPaths.length === 0) {
    throw wakeError('INVALID_WAKE', `Daemon ${daemonId} has no watched paths`, {
      path: 'watchPaths',
      daemonId,
    })
  }
  for (const entry of registration.watchPaths) {
    const problem = watchPathProblem(entry)
    if (problem !== null) {
      throw wakeError('INVALID_WAKE', `watchPaths of ${daemonId}: ${problem}`, {
        path: 'watchPaths',
        daemonId,
      })
    }
  }
  const prefixes = registration.watchPaths.filter((entry) => !isHostDirEntry(entry))
  const hostEntries = registration.watchPaths.filter(isHostDirEntry)
  const controller = new AbortController()
  const signal = controller.signal
  const keySleeper = sleeper(signal)
  const keyWatch =
    prefixes.length === 0
      ? { notified: false, established: Promise.resolve() }
      : openKeyWatch(backend, prefixes, signal, () => keySleeper.poke())
  let listings = 0
  const warnings: string[] = []
  const note = (paths: readonly string[]) =>
    notePathChange(backend, daemonId, paths, { clock, debounceMs })

  const listAll = async (): Promise<Map<string, string>> => {
    const versions = new Map<string, string>()
    for (const prefix of prefixes) {
      let cursor: string | undefined
      do {
        const page = await backend.list({ prefix, ...(cursor === undefined ? {} : { cursor }) })
        for (const entry of page.entries) versions.set(entry.key, entry.version)
        cursor = page.cursor
      } while (cursor !== undefined)
    }
    listings++
    return versions
  }

  const watchKeys = async (baseline: () => void) => {
    await keyWatch.established
    keySleeper.clear()
    let known = await listAll()
    baseline()
    while (!signal.aborted) {
      await keySleeper.sleep(keyWatch.notified ? 3_600_000 : pollMs)
      if (signal.aborted) break
      keySleeper.clear()
      const now = await listAll()
      const paths = diffVersions(known, now)
      known = now
      if (paths.length > 0) await note(paths)
    }
  }

  // A watch that keeps failing the same way (reopened on every rescan) is one warning.
  const warn = (entry: string, problem: string) => {
    const warning = `${entry}: ${problem}`
    if (!warnings.includes(warning)) warnings.push(warning)
  }

  const watchHostDirs = async (baseline: () => void) => {
    const hostSleeper = sleeper(signal)
    const dirs = hostEntries.map((entry) => ({
      entry,
      notifier: hostDirNotifier(hostDirOf(entry), (problem) => {
        if (problem !== undefined) warn(entry, problem)
        hostSleeper.poke()
      }),
      known: null as HostDirScan | null,
      removalReported: false,
    }))
    let unreported = new Set<string>()
    const rescan = async (first: boolean) => {
      for (const dir of dirs) {
        const problem = dir.notifier.open()
        if (problem !== null) warn(dir.entry, problem)
        const now = await scanHostDir(hostDirOf(dir.entry))
        if (now === null) dir.notifier.close()
        for (const path of diffVersions(dir.known ?? new Map(), now ?? new Map())) {
          if (!first) unreported.add(path)
        }
        dir.known = now
        if (now !== null) dir.removalReported = false
        else if (!dir.removalReported) {
          const queue = await openDaemonQueue(backend, daemonId, clock)
          await queue.trigger({ kind: 'path_removed', path: dir.entry, at: clock() })
          dir.removalReported = true
        }
      }
      if (unreported.size > 0) unreported = keepUnreported(unreported, await note([...unreported]))
      listings++
    }
    try {
      await rescan(true)
      baseline()
      while (!signal.aborted) {
        await hostSleeper.sleep(pollMs)
        if (signal.aborted) break
        // A notification starts a settle pause, so a burst of writes is one rescan.
        if (hostSleeper.poked) await pause(settleMs, signal)
        if (signal.aborted) break
        hostSleeper.clear()
        await rescan(false)
      }
    } finally {
      for (const dir of dirs) dir.notifier.close()
    }
  }

  let markReady: () => void = () => undefined
  const ready = new Promise<void>((resolve) => {
    markReady = resolve
  })
  let baselines = (prefixes.length > 0 ? 1 : 0) + (hostEntries.length > 0 ? 1 : 0)
  const baseline = () => {
    baselines--
    if (baselines === 0) markReady()
  }
  const loops = [
    ...(prefixes.length > 0 ? [watchKeys(baseline)] : []),
    ...(hostEntries.length > 0 ? [watchHostDirs(baseline)] : []),
  ]
  // One loop failing ends the other (and the watch) with its error, once both stopped.
  for (const loop of loops) loop.catch(() => controller.abort())
  const done = Promise.allSettled(loops).then((results) => {
    for (const result of results) if (result.status === 'rejected') throw result.reason
  })
  // `ready` must not hang when the first listing fails: it rejects with `done`'s error.
  const readyOrFailed = Promise.race([ready, done.then(() => undefined)])
  return {
    get notified() {
      return keyWatch.notified
    },
    get listings() {
      return listings
    },
    warnings,
    ready: readyOrFailed,
    done,
    async stop() {
      controller.abort()
      await done.catch(() => undefined)
    },
  }
}
