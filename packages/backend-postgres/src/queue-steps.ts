import { applyAcquire, type KeyState, type Lease } from '@agent-state/core'

/*
 * The two decisions of the native queue's transactions (native-queue.ts) that
 * make its guarantees: how many events an append may store (the exact
 * capacity) and the delivery lease a claim takes (a fresh fencing token per
 * delivery). The same rules as the SQLite backend's queue-steps.ts, in a
 * module of this backend's own so the runtime's mutant tests can replace
 * each with a broken one on PostgreSQL and see its check fail
 * (packages/runtime/test/daemon-queue-native-mutants.test.ts).
 */

/**
 * How many of `count` events an append stores into a queue holding
 * `next - head` events (pending plus in flight) under `capacity`: all that
 * fit in `prefix` mode, all or none in `all` mode; 0 means `QUEUE_FULL`.
 * The head is read in the same transaction as the tail (locked `FOR SHARE`),
 * so the bound is exact.
 */
export function appendRoom(
  capacity: number,
  next: number,
  head: number,
  count: number,
  mode: 'all' | 'prefix',
): number {
  const stored = Math.min(capacity - (next - head), count)
  if (stored <= 0 || (mode === 'all' && stored < count)) return 0
  return stored
}

/**
 * The delivery lease a fresh claim takes on the head record: `acquireLease`'s
 * own rule (`LEASE_HELD` while another delivery is live; the token from the
 * record's fencing counter, one larger than any before).
 */
export function grantDelivery(
  key: string,
  state: KeyState,
  holder: string,
  ttlMs: number,
  now: number,
): { state: KeyState; lease: Lease } {
  return applyAcquire(key, state, { holder, ttlMs }, now)
}
