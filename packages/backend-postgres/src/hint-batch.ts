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
   * connection until `hinted` settles. Otherwise the hint is a batch's, sent
   * on the batch lane, and the caller may give its connection back first.
   */
  readonly pipelined: boolean
}

/** Change hints of one backend's writes, shared by concurrent writes. */
export interface HintBatch {
  /**
   * Sends `write` on `client` with the change hint of `key`. With no hint in
   * flight the hint is queued on `client` right behind the write (pipeline
   * mode: one round trip, the server runs it once the write committed).
   * Otherwise the write goes alone and, once it committed, its key joins the
   * next batch: one hint statement naming every waiting key, sent as soon as
   * the hints in flight are done, on a connection of its own (the batch lane,
   * `Connection.useLane`): it never waits behind the writes queued for the
   * pool, and the writes it names need not hold their connections meanwhile.
   */
  send<R>(client: pg.ClientBase, key: string, write: () => Promise<R>): HintedWrite<R>
}

/** The hint statements a batch sends (`Statements.announce`, `Statements.announceKeys`). */
export interface HintSenders {
  readonly one: (client: pg.ClientBase, key: string) => Promise<unknown>
  readonly many: (keys: readonly string[]) => Promise<unknown>
}

interface Waiting {
  readonly keys: string[]
  readonly done: Promise<unknown>
  readonly settle: (failure: unknown) => void
}

/**
 * Why batch: PostgreSQL serializes the commits of the transactions that
 * notify (a database-wide lock), so 64 concurrent writers, each followed by
 * its own hint transaction, queue on that lock and double the statements the
 * server parses, plans and commits. One hint for the writes that committed
 * while the previous one was in flight keeps one notifying commit in flight
 * at a time. A lone writer (nothing in flight) keeps its hint pipelined
 * behind its write, so a write at concurrency 1 is still one round trip.
 * `batched: false` (a mutant for the count test) sends one hint per write.
 */
export function createHintBatch(senders: HintSenders, batched = true): HintBatch {
  let inFlight = 0
  let waiting: Waiting | undefined

  function track(sent: Promise<unknown>): Promise<unknown> {
    inFlight++
    const failure = sent.then(
      () => undefined,
      (error: unknown) => error ?? new Error('change hint failed'),
    )
    void failure.then(() => {
      inFlight--
      if (inFlight === 0 && waiting !== undefined) flush()
    })
    return failure
  }

  function flush(): void {
    const batch = waiting as Waiting
    waiting = undefined
    void track(senders.many(batch.keys)).then(batch.settle)
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
    if (inFlight === 0) flush()
    return done
  }

  return {
    send(client, key, write) {
      if (!batched || (inFlight === 0 && waiting === undefined)) {
        const written = write()
        return { written, hinted: track(senders.one(client, key)), pipelined: true }
      }
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
