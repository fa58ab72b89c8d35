import { setTimeout as sleep } from 'node:timers/promises'
import type Database from 'better-sqlite3'
import { isBusy, toAgentStateError } from './errors.js'

/**
 * Group commit: the mutations one backend instance receives in the same turn
 * of the event loop share one `BEGIN IMMEDIATE` transaction, so one fsync.
 *
 * better-sqlite3 is synchronous, so nothing can join a transaction while it
 * runs; a batch forms instead by queueing the mutations submitted before the
 * event loop's next check phase (`setImmediate`, which runs after every
 * pending microtask, however deep the callers' promise chains). A lone
 * operation waits for no timer: only for the rest of the current turn.
 *
 * Each operation keeps its own outcome:
 * - its body runs in submission order inside the transaction, reading the
 *   state through the same connection, so it sees every earlier operation of
 *   the batch (two compare-and-sets of one version: the first wins, the
 *   second fails exactly as if it had come in its own later transaction);
 * - the rules (preconditions, leases, row checks) throw before the body
 *   writes anything, and each body of a batch of several runs inside its own
 *   `SAVEPOINT`: a body that throws for any reason is rolled back to it, so
 *   a failed operation writes nothing and the others carry on;
 * - every promise settles only after `COMMIT` returned, i.e. after the fsync
 *   (`synchronous=FULL`): a success is durable, a failure is final.
 *
 * What a batch shares: a failure of the transaction itself (`BEGIN` still
 * busy after `busyTimeoutMs`, an error that makes SQLite abort the whole
 * transaction, a failed `COMMIT`) is every operation's outcome, as it would
 * be for each alone. Operations whose own rules had failed in it get that
 * error as well, since what they were checked against was not committed.
 */
export interface GroupCommit {
  /**
   * Queues `body` for the next batch; settles after its batch committed.
   * `bytes` (the value size of a put) counts towards {@link MAX_BATCH_BYTES}.
   */
  submit<T>(operation: string, body: () => T, bytes?: number): Promise<T>
  /** Runs every queued operation now (at close), unless a batch is waiting for a lock. */
  flushNow(): void
}

/**
 * Most operations in one batch: a bigger batch saves no further fsync worth
 * having but blocks the event loop longer (about 15–25 µs per row).
 */
export const MAX_BATCH_OPS = 512
/** Most value bytes in one batch (a single larger value still gets a batch of its own). */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024

interface Pending {
  readonly operation: string
  readonly bytes: number
  readonly body: () => unknown
  readonly resolve: (value: never) => void
  readonly reject: (error: unknown) => void
  failed: boolean
  outcome: unknown
}

/** Options of {@link createGroupCommit}. */
export interface GroupCommitOptions {
  readonly db: Database.Database
  readonly busyTimeoutMs: number
  readonly isClosed: () => boolean
  readonly closedError: () => Error
}

/** Creates the write queue of one connection (see {@link GroupCommit}). */
export function createGroupCommit(options: GroupCommitOptions): GroupCommit {
  const { db, busyTimeoutMs, isClosed, closedError } = options
  const savepoint = db.prepare('SAVEPOINT agent_state_op')
  const release = db.prepare('RELEASE agent_state_op')
  const rollbackTo = db.prepare('ROLLBACK TO agent_state_op')
  // The body of a single-operation batch runs as the transaction: a throw
  // rolls the whole transaction back, which is exactly that operation's undo.
  const transaction = db.transaction((batch: Pending[]): void => {
    if (batch.length === 1) {
      const only = batch[0] as Pending
      only.outcome = only.body()
      only.failed = false
      return
    }
    for (const op of batch) runInSavepoint(op)
  })
  let queue: Pending[] = []
  let scheduled = false
  let waiting = false

  function runInSavepoint(op: Pending): void {
    savepoint.run()
    try {
      op.outcome = op.body()
      op.failed = false
    } catch (error) {
      // Errors that end the transaction (SQLITE_FULL, IOERR, ...) leave no
      // savepoint to return to: the whole batch fails, as each op alone would.
      if (!db.inTransaction || isBusy(error)) throw error
      rollbackTo.run()
      op.failed = true
      op.outcome = error
    }
    release.run()
  }

  function settle(batch: Pending[]): void {
    for (const op of batch) {
      if (op.failed)
        op.reject(toAgentStateError(op.outcome, { operation: op.operation, mayHaveApplied: true }))
      else op.resolve(op.outcome as never)
    }
  }

  function failAll(batch: Pending[], error: unknown): void {
    for (const op of batch)
      op.reject(toAgentStateError(error, { operation: op.operation, mayHaveApplied: true }))
  }

  /**
   * One attempt at the batch. Returns SQLite's busy error when the lock was
   * held (everything rolled back, so trying again is safe); otherwise every
   * operation of the batch is settled.
   */
  function attempt(batch: Pending[]): unknown {
    try {
      transaction.immediate(batch)
    } catch (error) {
      if (isBusy(error)) return error
      failAll(batch, error)
      return undefined
    }
    settle(batch)
    return undefined
  }

  function flush(): void {
    scheduled = false
    if (waiting || queue.length === 0) return
    const batch = takeBatch()
    if (queue.length > 0) schedule()
    if (isClosed()) {
      failAll(batch, closedError())
      return
    }
    const started = performance.now()
    const busy = attempt(batch)
    if (busy === undefined) return
    if (busyTimeoutMs <= performance.now() - started) {
      failAll(batch, busy)
      return
    }
    waiting = true
    void retry(batch, started + busyTimeoutMs).finally(() => {
      waiting = false
      if (queue.length > 0) schedule()
    })
  }

  /**
   * Waits for the lock in slices: SQLite's busy handler blocks at most a
   * slice, then this yields to the event loop and tries again until
   * `deadline`. Operations submitted meanwhile form the next batch.
   */
  async function retry(batch: Pending[], deadline: number): Promise<void> {
    for (let round = 0; ; round++) {
      const backoff = Math.min(2 ** Math.min(round, 4), 16) * (0.5 + Math.random())
      await sleep(Math.max(0, Math.min(backoff, deadline - performance.now())))
      if (isClosed()) return failAll(batch, closedError())
      const busy = attempt(batch)
      if (busy === undefined) return
      if (deadline - performance.now() <= 0) return failAll(batch, busy)
    }
  }

  /** The oldest queued operations, up to the batch limits (at least one). */
  function takeBatch(): Pending[] {
    let count = 0
    let bytes = 0
    while (count < queue.length && count < MAX_BATCH_OPS) {
      bytes += (queue[count] as Pending).bytes
      if (count > 0 && bytes > MAX_BATCH_BYTES) break
      count++
    }
    if (count === queue.length) {
      const all = queue
      queue = []
      return all
    }
    return queue.splice(0, count)
  }

  function schedule(): void {
    if (scheduled) return
    scheduled = true
    setImmediate(flush)
  }

  return {
    submit<T>(operation: string, body: () => T, bytes = 0): Promise<T> {
      if (isClosed()) return Promise.reject(closedError())
      return new Promise<T>((resolve, reject) => {
        queue.push({
          operation,
          bytes,
          body,
          resolve: resolve as (value: never) => void,
          reject,
          failed: true,
          outcome: undefined,
        })
        schedule()
      })
    },
    flushNow(): void {
      while (queue.length > 0 && !waiting) flush()
    },
  }
}
