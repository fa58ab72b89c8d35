import {
  type ChangeNotificationCapability,
  createPollingWatcher,
  type ListOptions,
  type ListPage,
  type PollingWatcher,
} from '@agent-state/core'
import type Database from 'better-sqlite3'

/** How often a watching instance asks SQLite whether another connection committed. */
export const SQLITE_POLL_INTERVAL_MS = 50

/**
 * What the SQLite backend claims: `poll`. SQLite has no cross-process
 * notification; `PRAGMA data_version` (a read of the connection's shared
 * memory, no lock, no disk read) tells whether any other connection
 * committed since the last call, and only then does the watch list its
 * prefix and hint the keys whose version changed. 500 ms covers the 50 ms
 * interval, the listing and a loaded host.
 */
export const SQLITE_CHANGE_NOTIFICATION: ChangeNotificationCapability = {
  mode: 'poll',
  maxDelayMs: 500,
}

/** Why the SQLite watch has no channel to interrupt (its `WATCH_INTERRUPT` seam). */
export const SQLITE_NO_CHANNEL =
  'polling: each tick compares a fresh listing with the last good one, so a failed probe or listing loses nothing'

/**
 * The pollers of every instance on one connection: `data_version` does not
 * change for the connection's own commits, so a commit through a connection
 * marks every poller on it (the shared in-memory connection serves several
 * instances; a file connection serves one).
 */
const pollersByDb = new WeakMap<Database.Database, Set<PollingWatcher>>()

/** One instance's watches, and what its write path calls after each commit. */
export interface SqliteWatcher {
  readonly poller: PollingWatcher
  /** Call after a write through `db` committed. */
  committed(): void
  close(): void
}

/** Creates the watcher of one instance over `db`, listing with the instance's own `list`. */
export function createSqliteWatcher(
  db: Database.Database,
  list: (options: ListOptions) => Promise<ListPage>,
): SqliteWatcher {
  let lastVersion: unknown
  const poller = createPollingWatcher({
    list,
    intervalMs: SQLITE_POLL_INTERVAL_MS,
    probe() {
      const version = db.pragma('data_version', { simple: true })
      const changed = version !== lastVersion
      lastVersion = version
      return changed
    },
  })
  let pollers = pollersByDb.get(db)
  if (pollers === undefined) {
    pollers = new Set()
    pollersByDb.set(db, pollers)
  }
  pollers.add(poller)
  const mine = pollers
  return {
    poller,
    committed() {
      for (const p of mine) if (p.size > 0) p.changed()
    },
    close() {
      poller.close()
      mine.delete(poller)
    },
  }
}
