import { closeSync, constants, fsync, fsyncSync, openSync } from 'node:fs'

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
 * however many writers there are. A lone writer (nothing running or owed)
 * may instead call {@link DirSync.syncNow}, the same fsync without the trip
 * to libuv's thread pool (which costs a c=1 write about eight system calls
 * of thread hand-off and two thread wake-ups: `benchmarks/src/paths/fs-op-cost.ts`).
 *
 * The fsync runs on libuv's thread pool, so other writes keep making their
 * temp files and renames while it runs. Each fsync opens the directory by
 * path and closes it after. A descriptor kept open between fsyncs would save
 * an `open` and a `close` per write but is not kept, for two reasons: the
 * backend's `close` or `destroy` could close it under an in-flight fsync
 * (which would then fsync a reused descriptor), and an open descriptor of a
 * directory that another instance's `destroy` removed holds it in the kernel,
 * which delays inotify's notice of the removal (`IN_DELETE_SELF`) to every
 * process's watch until the descriptor is closed: the change-notification
 * test *keeps watching across destroy* fails with a kept descriptor.
 */
export interface DirSync {
  /** Resolves after an fsync of the directory that started after this call; rejects with its error. */
  afterRename(): Promise<void>
  /** fsyncs the directory now, synchronously; only while {@link DirSync.idle}. Throws its error. */
  syncNow(): void
  /** No fsync is running or owed: a lone writer may {@link DirSync.syncNow} instead. */
  readonly idle: boolean
}

/**
 * Whether a write whose rename landed may fsync the directory at once
 * ({@link DirSync.syncNow}) instead of joining a batch: only when it is the
 * instance's one write in flight (`inFlight` counts it), so no other write
 * could share the fsync, and nothing is running or owed.
 */
export function mayFsyncAlone(inFlight: number, sync: DirSync): boolean {
  return inFlight === 1 && sync.idle
}

/**
 * One turn of the event loop: lets callers that issue their next write from a
 * later macrotask (a closed loop of concurrent callers) start it.
 */
export function yieldToCallers(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}

/**
 * The directory fsync after a write's rename landed: at once for a lone write,
 * shared on the thread pool otherwise. "Lone" is decided after one turn of the
 * event loop: a write that starts alone runs synchronously up to this point,
 * so without the turn, callers that issue from their own macrotask would never
 * see another write in flight, and c=64 would run one synchronous write after
 * another (measured: 0.1-0.2x the raw client's throughput against 0.4-0.6x
 * with batches). The turn costs a lone write far less than the thread pool's
 * hand-off.
 */
export async function fsyncAfterRename(sync: DirSync, inFlight: () => number): Promise<void> {
  if (mayFsyncAlone(inFlight(), sync)) {
    await yieldToCallers()
    if (mayFsyncAlone(inFlight(), sync)) {
      sync.syncNow()
      return
    }
  }
  await sync.afterRename()
}

interface Waiter {
  readonly resolve: () => void
  readonly reject: (error: unknown) => void
}

/**
 * A {@link DirSync} for the directory at `dir`. `onStart` is a test seam, called as each fsync
 * starts with the number of writes it covers and whether it runs on the thread pool.
 */
export function createDirSync(
  dir: string,
  onStart?: (batch: number, pooled: boolean) => void,
): DirSync {
  let running = false
  let waiting: Waiter[] = []

  function open(): number {
    return openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
  }

  function closeQuietly(fd: number): void {
    try {
      closeSync(fd)
    } catch {
      // The fsync's outcome is what counts; the descriptor is gone either way.
    }
  }

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
      fd = open()
    } catch (error) {
      // Settle on a later tick, like the fsync would, so callers see one order.
      queueMicrotask(() => finish(error))
      return
    }
    onStart?.(batch.length, true)
    fsync(fd, (error) => {
      closeQuietly(fd)
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
    syncNow(): void {
      if (running || waiting.length > 0) throw new Error('DirSync.syncNow while an fsync is owed')
      const fd = open()
      onStart?.(1, false)
      try {
        fsyncSync(fd)
      } finally {
        closeQuietly(fd)
      }
    },
    get idle(): boolean {
      return !running && waiting.length === 0
    },
  }
}
