import type { Redis } from 'ioredis'

/**
 * Acknowledgements shared by the concurrent writers of one connection (the
 * `replication` option on a single server or behind Sentinel). `WAIT` blocks
 * the connection that sends it, so one `WAIT` per write makes every writer
 * queue behind the others' replica round trips. Instead, one `WAIT` is in
 * flight at a time and covers every script written on the connection before
 * it: scripts written while it is in flight wait for the next one, which is
 * sent as soon as it returns.
 *
 * Each write keeps its own guarantee: it is confirmed only by a `WAIT`
 * written after its script on the same socket (Redis answers a `WAIT` once
 * every earlier write of that client reached the replicas). A `WAIT` that
 * fails, or that went out on another socket than the script (a reconnect in
 * between: a fresh client's `WAIT` confirms nothing), counts as 0 replicas.
 */
export interface SharedWait {
  /**
   * Call synchronously right after writing a script on the client (ioredis
   * writes a command to the socket when it is called, in call order).
   * Resolves with the replica count of the first `WAIT` written after that
   * script, 0 when it failed or ran on another socket; never rejects.
   */
  afterWrite(): Promise<number>
  /**
   * Where the connection is in its round, for the pool that picks a write
   * connection (`connection-pool.ts`): `gathering` (scripts wait for a `WAIT`
   * not yet sent: a script written now shares it at no cost), `idle`
   * (nothing pending: a script written now gets its own `WAIT` at once) or
   * `in-flight` (a script written now waits for the `WAIT` in flight, then
   * its own), with `sentAt`, when the `WAIT` in flight was sent
   * (`performance.now()`).
   */
  state(): { readonly phase: 'gathering' | 'idle' | 'in-flight'; readonly sentAt: number }
}

interface Waiter {
  /** The socket the script was written on. */
  readonly stream: unknown
  readonly resolve: (acked: number) => void
}

/** The shared `WAIT` of `client`, asking for `replicas` within `timeoutMs`. */
export function createSharedWait(
  client: Redis,
  replication: { readonly replicas: number; readonly timeoutMs: number },
): SharedWait {
  /** Scripts written since the last `WAIT` was sent, in write order. */
  let pending: Waiter[] = []
  let inFlight = false
  let scheduled = false
  let sentAt = 0

  function send(): void {
    scheduled = false
    if (inFlight || pending.length === 0) return
    // Swapped in the same synchronous step that writes the WAIT: exactly the scripts written before it.
    const batch = pending
    pending = []
    inFlight = true
    sentAt = performance.now()
    const stream = client.stream
    client
      .wait(replication.replicas, replication.timeoutMs)
      .then(
        (reply) => Number(reply),
        () => 0,
      )
      .then((acked) => {
        inFlight = false
        const counted = Number.isFinite(acked) ? acked : 0
        for (const waiter of batch) waiter.resolve(waiter.stream === stream ? counted : 0)
        // Scripts written while this WAIT was in flight: the next WAIT covers them all.
        send()
      })
  }

  return {
    afterWrite() {
      return new Promise<number>((resolve) => {
        pending.push({ stream: client.stream, resolve })
        // Deferred to the end of this event-loop turn, so writes issued in the same turn (every
        // caller a WAIT's reply resolved, each a few promise hops later) share the first WAIT too.
        if (!inFlight && !scheduled) {
          scheduled = true
          setImmediate(send)
        }
      })
    },
    state() {
      return { phase: inFlight ? 'in-flight' : scheduled ? 'gathering' : 'idle', sentAt }
    },
  }
}
