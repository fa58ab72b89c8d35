import { type Backend, type Clock, systemClock } from '@agent-state/core'
import { z } from 'zod'
import { wakeError } from '../shared/errors.js'
import { notePathChange, readDaemonWakes } from './daemon-wakes.js'
import { diffVersions, openKeyWatch } from './key-watch.js'

/** Options of {@link watchDaemonPaths}; the single source of their types. */
export const watchDaemonPathsOptionsSchema = z.strictObject({
  /** Where due times come from. Default `Date.now`. */
  clock: z
    .custom<Clock>((value) => typeof value === 'function', 'clock must be a function')
    .default(() => systemClock),
  /** Ms between two listings where the backend has no change notification. Default 1000. */
  pollMs: z.int().min(10).max(3_600_000).default(1000),
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
  /** Resolves once the baseline listing is taken: changes from then on are seen. */
  readonly ready: Promise<void>
  /** Resolves after `stop()`; rejects with the failure that ended the watch (never a silent stop). */
  readonly done: Promise<void>
  /** Ends the watch. Idempotent. */
  stop(): Promise<void>
}

/**
 * Watches a spawned daemon's `watchPaths` (key prefixes of `backend`) and
 * turns every change under them (a key written, added or deleted) into a
 * coalesced path wake (`notePathChange`), which a dispatcher with the
 * `daemons` option enqueues into the daemon's queue. Run it in any one
 * process (more are harmless: their path wakes coalesce).
 *
 * It keeps the keys and versions under each path and lists them again when
 * the backend's change notification (`watch`) hints a change, or every
 * `pollMs` where the backend claims none (or its watch ended). A listing or
 * wake registration that fails ends the watch and rejects `done`.
 *
 * @throws `INVALID_WAKE` for invalid options or a daemon with no watched paths.
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
  const { clock, pollMs, debounceMs } = parsed.data
  const registration = await readDaemonWakes(backend, daemonId)
  if (registration === null || registration.watchPaths.length === 0) {
    throw wakeError('INVALID_WAKE', `Daemon ${daemonId} has no watched paths`, {
      path: 'watchPaths',
      daemonId,
    })
  }
  const prefixes = registration.watchPaths
  const controller = new AbortController()
  let pending = false
  let wake: (() => void) | null = null
  const changed = () => {
    pending = true
    wake?.()
  }
  const keyWatch = openKeyWatch(backend, prefixes, controller.signal, changed)
  let listings = 0

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
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (pending || controller.signal.aborted) {
        resolve()
        return
      }
      const timer = setTimeout(done, ms)
      controller.signal.addEventListener('abort', done, { once: true })
      function done() {
        clearTimeout(timer)
        controller.signal.removeEventListener('abort', done)
        wake = null
        resolve()
      }
      wake = done
    })

  let markReady: () => void = () => undefined
  const ready = new Promise<void>((resolve) => {
    markReady = resolve
  })
  const run = async () => {
    await keyWatch.established
    pending = false
    let known = await listAll()
    markReady()
    while (!controller.signal.aborted) {
      await sleep(keyWatch.notified ? 3_600_000 : pollMs)
      if (controller.signal.aborted) break
      pending = false
      const now = await listAll()
      const paths = diffVersions(known, now)
      known = now
      if (paths.length > 0) await notePathChange(backend, daemonId, paths, { clock, debounceMs })
    }
  }
  const done = run()
  // `ready` must not hang when the first listing fails: it rejects with `done`'s error.
  const readyOrFailed = Promise.race([ready, done.then(() => undefined)])
  done.catch(() => controller.abort())
  return {
    get notified() {
      return keyWatch.notified
    },
    get listings() {
      return listings
    },
    ready: readyOrFailed,
    done,
    async stop() {
      controller.abort()
      await done.catch(() => undefined)
    },
  }
}
