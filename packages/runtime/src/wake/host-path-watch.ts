import { type FSWatcher, watch as fsWatch } from 'node:fs'
import { lstat, readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { daemonError } from '../shared/errors.js'

/**
 * Host-directory entries of a daemon's `watchPaths` (docs/runtime/wakes.md,
 * Daemon wakes): an entry that is an absolute `file:` URL names a directory
 * on the host where `watchDaemonPaths` runs; every other entry stays a key
 * prefix of the backend. This module validates the entries, scans a
 * directory (names, mtime, size) and keeps a recursive `fs.watch` on it whose
 * notifications only hint that a rescan is due: the rescan, not the
 * notification, decides what changed, so an event `fs.watch` drops is found
 * by the next rescan.
 */

/** Whether `entry` is a host-directory entry (`file:` URL) rather than a key prefix. */
export function isHostDirEntry(entry: string): boolean {
  return entry.toLowerCase().startsWith('file:')
}

/**
 * Why `entry` is not a valid `watchPaths` entry, or `null` when it is. A
 * host directory must be an absolute `file:///…` URL with no host, query or
 * fragment; an entry that looks like a host path but is not a `file:` URL
 * (`/…`, `./…`, `../…`, `~…`) is refused as ambiguous, since a key prefix
 * never starts that way on purpose.
 */
export function watchPathProblem(entry: string): string | null {
  if (/^(\/|\.\.?\/|~)/.test(entry)) {
    return `${JSON.stringify(entry)} is ambiguous: write a host directory as an absolute file:/// URL`
  }
  if (!isHostDirEntry(entry)) return null
  let url: URL
  try {
    url = new URL(entry)
  } catch {
    return `${JSON.stringify(entry)} is not a valid file: URL`
  }
  if (!entry.toLowerCase().startsWith('file:///') || url.host !== '') {
    return `${JSON.stringify(entry)} must be an absolute file:/// URL with no host`
  }
  if (url.search !== '' || url.hash !== '') {
    return `${JSON.stringify(entry)} must have no query or fragment`
  }
  return null
}

/**
 * Refuses invalid `watchPaths` entries at spawn (see {@link watchPathProblem}).
 *
 * @throws `INVALID_QUEUE_OPTIONS` with `context.path` `watchPaths`.
 */
export function assertWatchPaths(watchPaths: readonly string[] | undefined, daemonId: string) {
  for (const entry of watchPaths ?? []) {
    const problem = watchPathProblem(entry)
    if (problem !== null) {
      throw daemonError('INVALID_QUEUE_OPTIONS', `watchPaths: ${problem}`, {
        daemonId,
        path: 'watchPaths',
      })
    }
  }
}

/** The host directory a valid `file:` entry names. */
export function hostDirOf(entry: string): string {
  return fileURLToPath(entry)
}

/** A scan of a host directory: each file's `file:` URL and its `mtime:size:inode` signature. */
export type HostDirScan = Map<string, string>

/**
 * Scans `dir` recursively: every entry that is not a directory (symbolic
 * links below `dir` are not followed, so a link loop cannot trap the scan;
 * `dir` itself may be one). Returns
 * `null` when `dir` is missing or not a directory. An entry removed while
 * the scan runs is skipped (the next scan sees the removal).
 */
export async function scanHostDir(dir: string): Promise<HostDirScan | null> {
  try {
    // The watched directory itself may be reached through a symbolic link (stat, not lstat).
    if (!(await stat(dir)).isDirectory()) return null
  } catch (error) {
    if (isGone(error)) return null
    throw error
  }
  const scan: HostDirScan = new Map()
  const walk = async (current: string): Promise<void> => {
    let names: string[]
    try {
      names = await readdir(current)
    } catch (error) {
      if (isGone(error)) return
      throw error
    }
    for (const name of names) {
      const path = join(current, name)
      try {
        const stats = await lstat(path)
        if (stats.isDirectory()) await walk(path)
        else scan.set(pathToFileURL(path).href, `${stats.mtimeMs}:${stats.size}:${stats.ino}`)
      } catch (error) {
        if (!isGone(error)) throw error
      }
    }
  }
  await walk(dir)
  return scan
}

function isGone(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'ENOENT' || code === 'ENOTDIR'
}

/**
 * The changed paths a watch still has to name after `notePathChange`
 * answered `wakeId`: none when a new wake took them, all of them when they
 * were coalesced into a pending wake (whose payload was fixed before they
 * happened), so the watch names them in its next wake.
 */
export function keepUnreported(unreported: ReadonlySet<string>, wakeId: string | null) {
  return wakeId === null ? new Set(unreported) : new Set<string>()
}

/** A recursive `fs.watch` on a host directory, reopened as the directory comes and goes. */
export interface HostDirNotifier {
  /** Opens the watch when `dir` exists and none is open; a failure to open is returned, not thrown. */
  open(): string | null
  /** Closes the watch (the directory is gone, or the watch ends). */
  close(): void
}

/**
 * A notifier calling `hint` on every `fs.watch` notification under `dir`.
 * An error of the open watch closes it and is passed to `hint` (the rescan
 * that follows finds out whether the directory went away).
 */
export function hostDirNotifier(dir: string, hint: (problem?: string) => void): HostDirNotifier {
  let watcher: FSWatcher | null = null
  return {
    open() {
      if (watcher !== null) return null
      try {
        watcher = fsWatch(dir, { recursive: true, persistent: false }, () => hint())
        watcher.on('error', (error) => {
          watcher?.close()
          watcher = null
          hint(error.message)
        })
        return null
      } catch (error) {
        if (isGone(error)) return null
        return error instanceof Error ? error.message : String(error)
      }
    },
    close() {
      watcher?.close()
      watcher = null
    },
  }
}
