import { type FSWatcher, watch as watchDir } from 'node:fs'
import { basename } from 'node:path'
import {
  type ChangeHint,
  type ChangeNotificationCapability,
  createWatchSet,
  type WatchOptions,
} from '@agent-state/core'
import { classifyName } from './key-layout.js'

/**
 * What the filesystem backend claims. A write ends with a `rename` of its
 * complete temp file over the record, a delete with an `unlink`: inotify
 * reports either to every process watching the records directory as soon as
 * it happened (and a reader then sees it). 500 ms covers the kernel's
 * delivery, Node's event loop on a loaded host and a re-watch after an error.
 */
export const FS_CHANGE_NOTIFICATION: ChangeNotificationCapability = {
  mode: 'push',
  maxDelayMs: 500,
}

/** Longest wait between two attempts to watch the directory again. */
const MAX_RETRY_MS = 250

/** The record store's watches on one records directory. */
export interface FsWatcher {
  /** The RecordStore `watch` hook (prefix checked by `createRecordBackend`). */
  watch(prefix: string, options: WatchOptions): AsyncIterable<ChangeHint>
  /**
   * Simulates a lost watch (an inotify queue overflow or a watch error):
   * the directory watch fails as it would, and is replaced. For the
   * contract suite's resync check; not exported from the package.
   */
  interrupt(): void
  close(): void
}

/**
 * One `fs.watch` (inotify on Linux) of the namespace's flat records
 * directory per store instance, open while a watch is. A record's file name
 * is the hex of its key's UTF-8 bytes, so an event names the key: a `key`
 * hint. A key over 120 bytes has a hashed name that does not give the key
 * back: its event is a `prefix` hint of each watch's own prefix (spurious for
 * watches the key is not under; hints may be). Temp files are ignored. An
 * event without a file name, a watch error or the directory going away
 * (`destroy`) ends the watch: it is opened again (the directory recreated
 * first), with back-off, and every watch gets `resync`.
 */
export function createFsWatcher(recordsDir: string, ensureDir: () => void): FsWatcher {
  const watches = createWatchSet()
  let watcher: FSWatcher | undefined
  let retry: NodeJS.Timeout | undefined
  let attempt = 0
  let closed = false

  function stop(): void {
    clearTimeout(retry)
    retry = undefined
    const old = watcher
    watcher = undefined
    old?.close()
  }

  function lost(): void {
    stop()
    if (closed || watches.size === 0) return
    const delay = Math.min(25 * 2 ** attempt, MAX_RETRY_MS)
    attempt++
    retry = setTimeout(start, delay)
  }

  function start(): void {
    retry = undefined
    if (closed || watches.size === 0 || watcher !== undefined) return
    let created: FSWatcher
    try {
      ensureDir()
      created = watchDir(recordsDir, { persistent: true })
    } catch {
      lost()
      return
    }
    watcher = created
    created.on('change', (_event, filename) => {
      if (filename === null || filename === undefined) {
        // The kernel could not say what changed (an overflow): nothing is known.
        watches.resync()
        return
      }
      const name = String(filename)
      if (name === basename(recordsDir)) {
        // The directory itself went (destroy): this watch is dead; watch the new one.
        lost()
        return
      }
      const kind = classifyName(name)
      if (kind.kind === 'hex') watches.key(kind.key)
      else if (kind.kind === 'hashed') watches.prefixChanged('')
    })
    created.on('error', () => {
      if (watcher === created) lost()
    })
    created.on('close', () => {
      if (watcher === created) lost()
    })
    attempt = 0
    // Established: new watches get their first hint, watches that outlived a lost one re-read.
    watches.resync()
  }

  return {
    watch(prefix, options) {
      const stream = watches.open(prefix, {
        signal: options.signal,
        onEnd() {
          if (watches.size === 0) stop()
        },
      })
      if (stream.ended) return stream
      if (watcher !== undefined) stream.resync()
      else if (retry === undefined) start()
      return stream
    },
    interrupt() {
      watcher?.emit('error', new Error('simulated inotify queue overflow'))
    },
    close() {
      closed = true
      watches.endAll()
      stop()
    },
  }
}
