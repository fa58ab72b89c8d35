import { closeSync, constants, fsync, openSync } from 'node:fs'

const O_DIRECTORY = constants.O_DIRECTORY ?? 0
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0

/**
 * Group commit of the records directory: concurrent writes share its fsync.
 *
 * The rule: a write calls {@link DirSync.afterRename} only once its rename
 * (or link, or removal) has landed, and the promise resolves only after an
 * fsync of the directory that *started* after that call. One fsync therefore
 * covers every rename that completed before it started, so while one fsync
 * runs, the renames that land meanwhile wait for the next one, which starts
 * as soon as it ends and covers them all: at most two fsyncs are ever owed,
 * however many writers there are.
 *
 * The fsync runs on libuv's thread pool, so other writes keep making their
 * temp files and renames while it runs; each batch opens the directory by
 * path (a descriptor the backend's `close` or `destroy` could close under an
 * in-flight fsync would risk fsyncing a reused descriptor).
 */
export interface DirSync {
  /** Resolves after an fsync of the directory that started after this call; rejects with its error. */
  afterRename(): Promise<void>
  /** No fsync is running or owed: a lone writer may fsync synchronously instead. */
  readonly idle: boolean
}

interface Waiter {
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
}

/** A {@link DirSync} for the directory at `dir`. `onStart` is a test seam (called as each fsync starts). */
export function createDirSync(dir: string, onStart?: (batch: number) => void): DirSync {
  let running = false
  let waiting: Waiter[] = []

  function start(): void {
    const batch = waiting
    waiting = []
    running = true
    const finish = (error: unknown): void => {
      for (const waiter of batch) {
        if (error === null) waiter.resolve()
        else waiter.reject(error)
      }
      running = false
      if (waiting.length > 0) start()
    }
    let fd: number
    try {
      fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    } catch (error) {
      // Settle on a later tick, like the fsync would, so callers see one order.
      queueMicrotask(() => finish(error))
      return
    }
    onStart?.(batch.length)
    fsync(fd, (error) => {
      try {
        closeSync(fd)
      } catch {
        // The fsync's outcome is what counts; the descriptor is gone either way.
      }
      finish(error ?? null)
    })
  }

  return {
    afterRename(): Promise<void> {
      return new Promise<void>((resolve, reject) => {
        waiting.push({ resolve, reject })
        if (!running) start()
      })
    },
    get idle(): boolean {
      return !running && waiting.length === 0
    },
  }
}
