import type pg from 'pg'

/** What {@link HintBatch.send} returns: the write's result, and its hint's failure (if any). */
export interface HintedWrite<R> {
  /** The write statement's result (or its error). */
  readonly written: Promise<R>
  /**
   * Resolves once a change hint naming the key committed (`undefined`), or to
   * the error of the hint statement that should have named it. Never rejects.
   */
  readonly hinted: Promise<unknown>
  /**
   * The hint rides on the write's connection (pipelined): the caller keeps the
   * connection until `hinted` settles. Otherwise the write's key waits for a
   * batch (carried behind a later write, or sent on the batch lane), and the
   * caller may give its connection back first.
   */
  readonly pipelined: boolean
}

/**
 * A write that will be sent (see {@link HintBatch.expect}): while it is
 * pending, a batch waits for it to carry its hint rather than take the lane.
 */
export interface ExpectedWrite {
  /** The write will not be sent (any more): it stops counting as pending. Idempotent. */
  readonly leave: () => void
}

/** Change hints of one backend's writes, shared by concurrent writes. */
export interface HintBatch {
  /**
   * Counts a write as pending from before it waits for a connection until it
   * is sent (`send`) or left: a batch waiting while writes are pending is
   * carried by the next one sent instead of taking a statement of its own.
   */
  expect(): ExpectedWrite
  /**
   * Sends `write` on `client` with the change hint of `key`, and ends
   * `expected`'s pending state. With no hint in flight the hint is queued on
   * `client` right behind the write (pipeline mode: one round trip, the
   * server runs it once the write committed), and names the keys of the
   * waiting batch too, if one waits: the write carries the batch. Otherwise
   * the write goes alone and, once it committed, its key joins the batch,
   * which waits for the hints in flight to finish, then for the next write
   * to carry it. It takes the batch lane (`Connection.useLane`, a connection
   * of its own that never waits behind the writes queued for the pool) only
   * when no write is pending, or once it waited `carrierWaitMs` for one.
   */
  send<R>(
    client: pg.ClientBase,
    key: string,
    write: () => Promise<R>,
    expected?: ExpectedWrite,
  ): HintedWrite<R>
}

/** The hint statements a batch sends (`Statements.announce`, `Statements.announceKeys`). */
export interface HintSenders {
  /** The hint of one key, pipelined on `client`. */
  readonly one: (client: pg.ClientBase, key: string) => Promise<unknown>
  /** The hint of `keys`, pipelined on `client` (a write carrying a batch). */
  readonly carried: (client: pg.ClientBase, keys: readonly string[]) => Promise<unknown>
  /** The hint of `keys` on the batch lane. */
  readonly lane: (keys: readonly string[]) => Promise<unknown>
}

/** How a batch is formed; the defaults are the shipped behaviour, the rest are test mutants. */
export interface HintBatchOptions {
  /** `false`: every write sends a hint of its own, even while others are in flight. */
  readonly batched?: boolean
  /** `false`: a batch never waits for a carrier; it takes the lane as soon as no hint is in flight. */
  readonly carried?: boolean
  /** How long a batch waits for a pending write to carry it before it takes the lane. */
  readonly carrierWaitMs?: number
}

/**
 * How long a batch waits for a pending write to carry it (see
 * {@link HintBatch.send}). A pending write is usually sent within a fraction
 * of a millisecond (the next pooled connection given back); the bound is for
 * writes queued behind slow statements, whose batch would otherwise wait for
 * them.
 */
export const CARRIER_WAIT_MS = 2

interface Waiting {
  readonly keys: string[]
  readonly done: Promise<unknown>
  readonly settle: (failure: unknown) => void
  /** The timer that sends the batch on the lane if no carrier came (armed while it waits for one). */
  timer?: ReturnType<typeof setTimeout> | undefined
}

/**
 * Why batch: PostgreSQL serializes the commits of the transactions that
 * notify (a database-wide lock), so 64 concurrent writers, each followed by
 * its own hint transaction, queue on that lock and double the statements the
 * server parses, plans and commits. One hint for the writes that committed
 * while the previous one was in flight keeps one notifying commit in flight
 * at a time. A lone writer (nothing in flight) keeps its hint pipelined
 * behind its write, so a write at concurrency 1 is still one round trip.
 *
 * Why carry: a hint statement costs the server about as much again whether it
 * goes alone or behind a write, but the lane's costs a round trip, a wakeup
 * and a checkout of its own; pipelined behind the next write it costs none of
 * them, and the batch grows while that write commits (one hint statement for
 * about 16 writes at c=64 instead of 6: FINDINGS, "Carried hints").
 */
export function createHintBatch(senders: HintSenders, options: HintBatchOptions = {}): HintBatch {
  const batched = options.batched ?? true
  const carried = options.carried ?? true
  const carrierWaitMs = options.carrierWaitMs ?? CARRIER_WAIT_MS
  let inFlight = 0
  let pending = 0
  let waiting: Waiting | undefined

  function track(sent: Promise<unknown>): Promise<unknown> {
    inFlight++
    const failure = sent.then(
      () => undefined,
      (error: unknown) => error ?? new Error('change hint failed'),
    )
    void failure.then(() => {
      inFlight--
      dispatch()
    })
    return failure
  }

  /** Sends the waiting batch on the lane, or lets it wait for a carrier. */
  function dispatch(): void {
    if (waiting === undefined || inFlight > 0) return
    if (carried && pending > 0) {
      const batch = waiting
      batch.timer ??= setTimeout(() => {
        if (waiting === batch && inFlight === 0) sendOnLane()
      }, carrierWaitMs)
      return
    }
    sendOnLane()
  }

  function take(): Waiting {
    const batch = waiting as Waiting
    waiting = undefined
    if (batch.timer !== undefined) clearTimeout(batch.timer)
    return batch
  }

  function sendOnLane(): void {
    const batch = take()
    void track(senders.lane(batch.keys)).then(batch.settle)
  }

  function join(key: string): Promise<unknown> {
    if (waiting === undefined) {
      let settle: (failure: unknown) => void = () => {}
      const done = new Promise<unknown>((resolve) => {
        settle = resolve
      })
      waiting = { keys: [], done, settle }
    }
    waiting.keys.push(key)
    const { done } = waiting
    dispatch()
    return done
  }

  return {
    expect() {
      pending++
      let left = false
      return {
        leave() {
          if (left) return
          left = true
          pending--
          dispatch()
        },
      }
    },
    send(client, key, write, expected) {
      if (!batched || inFlight === 0) {
        const written = write()
        let hinted: Promise<unknown>
        if (waiting === undefined) hinted = track(senders.one(client, key))
        else {
          const batch = take()
          hinted = track(senders.carried(client, [key, ...batch.keys]))
          void hinted.then(batch.settle)
        }
        expected?.leave()
        return { written, hinted, pipelined: true }
      }
      expected?.leave()
      const written = write()
      return {
        written,
        // A write that failed has nothing to announce (its caller throws its error).
        hinted: written.then(
          () => join(key),
          () => undefined,
        ),
        pipelined: false,
      }
    },
  }
}
