/**
 * Change notification for stores that can only say *that* something changed
 * (SQLite's `PRAGMA data_version`, an inotify event on a directory) or
 * nothing at all: each watch keeps the keys and versions under its prefix,
 * and when the store's probe says "changed" it lists the prefix again and
 * hints every key whose version differs, appeared or went. The listing is
 * the backend's own `list`, so the diff sees exactly what a reader sees, and
 * a hint can only follow a committed write.
 */
import type { ListOptions, ListPage } from './backend.js'
import {
  assertWatchPrefix,
  type ChangeHint,
  createWatchSet,
  failedWatch,
  type HintStream,
  type WatchOptions,
} from './change-notification.js'
import { walkList } from './list-walk.js'

/** Options of {@link createPollingWatcher}. */
export interface PollingWatcherOptions {
  /** The backend's `list` (keys and versions under a prefix, paged). */
  readonly list: (options: ListOptions) => Promise<ListPage>
  /**
   * Whether anything may have changed since its previous call (resolve
   * `true` when unsure). Absent: every tick lists. Called once before the
   * first listing, to set its baseline.
   */
  readonly probe?: () => boolean | Promise<boolean>
  /** Milliseconds between two probes while a watch is open. */
  readonly intervalMs: number
  /** Largest prefix accepted, in UTF-8 bytes. */
  readonly maxKeyBytes?: number
}

/** The watches of one backend instance, fed by polling. */
export interface PollingWatcher {
  /** A `watch` for the backend: `assertOpen` throws `CLOSED` after close. */
  watch(
    prefix: string,
    options: WatchOptions | undefined,
    assertOpen: () => void,
  ): AsyncIterable<ChangeHint>
  /** Something changed that the probe will not report (this instance's own write, a file event). */
  changed(): void
  /** Every watch must re-read (a lost file watch): each gets `resync` and a fresh listing. */
  resync(): void
  /** Ends every watch and stops the timer. */
  close(): void
  /** Open watches. */
  readonly size: number
}

interface Watched {
  /** Key to version under the prefix, or `undefined` until the first listing. */
  snapshot: Map<string, string> | undefined
  /** A resync is owed once the next listing is done. */
  resyncDue: boolean
}

async function listVersions(
  list: PollingWatcherOptions['list'],
  prefix: string,
): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  for await (const page of walkList({ list }, { prefix, limit: 1000 })) {
    for (const entry of page.entries) out.set(entry.key, entry.version)
  }
  return out
}

/**
 * Creates the polling watcher of one backend instance. The timer runs only
 * while a watch is open (and keeps the process alive then, as a socket
 * would); a tick that finds the probe unchanged costs the probe alone.
 */
export function createPollingWatcher(options: PollingWatcherOptions): PollingWatcher {
  const watches = createWatchSet()
  const watched = new Map<HintStream, Watched>()
  let timer: NodeJS.Timeout | undefined
  let dirty = false
  let running = false
  let baselineSet = false

  function stopIfIdle(): void {
    if (watches.size === 0 && timer !== undefined) {
      clearInterval(timer)
      timer = undefined
      baselineSet = false
    }
  }

  async function refresh(stream: HintStream, state: Watched): Promise<void> {
    const next = await listVersions(options.list, stream.prefix)
    const before = state.snapshot
    state.snapshot = next
    if (before !== undefined) {
      for (const [key, version] of next) if (before.get(key) !== version) stream.key(key)
      for (const key of before.keys()) if (!next.has(key)) stream.key(key)
    }
    if (state.resyncDue) {
      state.resyncDue = false
      stream.resync()
    }
  }

  async function tick(): Promise<void> {
    if (running) return
    running = true
    try {
      if (!baselineSet) {
        // The probe's baseline predates every listing below, so no change falls between them.
        await options.probe?.()
        baselineSet = true
        dirty = true
      }
      const probed = options.probe === undefined ? true : await options.probe()
      const pending = [...watched].filter(([stream, state]) => {
        return !stream.ended && (state.snapshot === undefined || state.resyncDue)
      })
      if (!(dirty || probed) && pending.length === 0) return
      const all = dirty || probed
      dirty = false
      for (const [stream, state] of watched) {
        if (stream.ended) continue
        if (!all && state.snapshot !== undefined && !state.resyncDue) continue
        try {
          await refresh(stream, state)
        } catch {
          // Nothing is lost: the next listing is compared with the last good one.
          dirty = true
        }
      }
    } catch {
      dirty = true
    } finally {
      running = false
    }
  }

  return {
    get size() {
      return watches.size
    },
    watch(prefix, watchOptions, assertOpen) {
      try {
        assertOpen()
        assertWatchPrefix(prefix, options.maxKeyBytes)
      } catch (error) {
        return failedWatch(error)
      }
      const stream = watches.open(prefix, {
        signal: watchOptions?.signal,
        onEnd() {
          watched.delete(stream)
          stopIfIdle()
        },
      })
      if (stream.ended) return stream
      // The first hint (resync) follows the first listing: from then on every change is a diff.
      watched.set(stream, { snapshot: undefined, resyncDue: true })
      timer ??= setInterval(() => void tick(), options.intervalMs)
      void tick()
      return stream
    },
    changed() {
      dirty = true
    },
    resync() {
      for (const state of watched.values()) state.resyncDue = true
      dirty = true
    },
    close() {
      watches.endAll()
      stopIfIdle()
    },
  }
}
