import type { Delivery } from './delivery.js'

/**
 * Ends a daemon turn that carries a state update as one decision: the
 * worker's fenced checkpoint, which records the event's sequence number
 * with the state (`state.daemon.decidedSeq`), decides it. Only then is the
 * head of the queue moved; when that write does not land (the delivery
 * lapsed, a transient failure, a crash), the event stays at the head and the
 * daemon's next claim of it, in this process or after a takeover, finishes
 * the acknowledgement instead of handing the event out again.
 *
 * - `persist` fails: nothing was decided. The delivery is given back (the
 *   event is claimed next, by this daemon or by whoever took it over) and
 *   the error is thrown: neither the event is acknowledged nor the state
 *   stored.
 * - The head write fails after `persist`: the turn is decided (state stored,
 *   event acknowledged for the daemon); this resolves `null`, and the head
 *   moves at the daemon's next `next()`.
 *
 * `settle` is the head write: `Delivery.ack`, or `Delivery.ackAndClaim`
 * (whose next delivery this resolves).
 */
export async function decideTurn<T>(
  delivery: Delivery,
  persist: () => Promise<void>,
  settle: (delivery: Delivery) => Promise<T>,
): Promise<T | null> {
  try {
    await persist()
  } catch (error) {
    await giveBack(delivery)
    throw error
  }
  try {
    return await settle(delivery)
  } catch {
    // Decided already; the roll-forward in `Daemon.next()` moves the head.
    await giveBack(delivery)
    return null
  }
}

/**
 * Releases a delivery, quietly: a stale one (expired, taken over) is back in
 * the queue already, and one that cannot be released now is after its
 * visibility timeout.
 */
async function giveBack(delivery: Delivery): Promise<void> {
  await delivery.release().catch(() => undefined)
}
