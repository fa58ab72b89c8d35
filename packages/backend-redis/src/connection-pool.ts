import type { SharedWait } from './shared-wait.js'

/**
 * Write connections per backend under `replication` on a single server. `WAIT` blocks the connection it is sent on: with one
 * connection, a write that arrives while a `WAIT` is in flight waits for it
 * and then for its own, about 1.5 replica round trips on average. With a
 * few, it usually finds a connection where its own `WAIT` can go out at
 * once (one round trip). Opened lazily: only as many as concurrent writers
 * needed at once.
 */
export const WRITE_CONNECTIONS = 4

/** What decides the connections a backend opens (see {@link connectionPlan}). */
export interface ConnectionTopology {
  /** Whether writes wait for replicas (`replication`). */
  readonly replication: boolean
  readonly cluster: boolean
  readonly sentinel: boolean
}

/**
 * The connections a backend uses: without `replication`, one for
 * everything. With it on a single server, reads (and every script that
 * needs no acknowledgement) get one of their own, so they never wait behind
 * a `WAIT`, and writes get a pool of `WRITE_CONNECTIONS`; in Cluster, reads
 * get a second Cluster client and writes one, whose node connections each
 * share a `WAIT`. Behind Sentinel, one connection for everything, as without
 * `replication`: during a failover each connection follows the switch on
 * its own, so a read on one could reach the old primary after a write on
 * another was confirmed on the new one (read-your-writes lost for that
 * moment). One connection sees one primary at a time.
 */
export function connectionPlan(topology: ConnectionTopology): {
  readsApart: boolean
  writers: number
} {
  if (!topology.replication || topology.sentinel) return { readsApart: false, writers: 1 }
  return { readsApart: true, writers: topology.cluster ? 1 : WRITE_CONNECTIONS }
}

/** A write connection the pool can pick: ready, with its shared `WAIT`. */
export interface PoolMember<C> {
  readonly client: C
  readonly shared: SharedWait
}

/**
 * The connection a write should go to, among `ready` (the pool's members
 * that are connected now), or `undefined` when another member should be
 * opened instead (`canOpen`):
 * 1. one gathering scripts for a `WAIT` not yet sent (shares it at no cost);
 * 2. an idle one (its own `WAIT` goes out at once);
 * 3. none of those and a member can still be opened: `undefined`;
 * 4. otherwise the one whose `WAIT` in flight was sent first (it returns
 *    soonest, and its next `WAIT` goes out then).
 */
export function pickWriter<C>(
  ready: readonly PoolMember<C>[],
  canOpen: boolean,
): PoolMember<C> | undefined {
  let idle: PoolMember<C> | undefined
  let oldest: PoolMember<C> | undefined
  let oldestSentAt = Number.POSITIVE_INFINITY
  for (const member of ready) {
    const { phase, sentAt } = member.shared.state()
    if (phase === 'gathering') return member
    if (phase === 'idle') idle ??= member
    else if (sentAt < oldestSentAt) {
      oldest = member
      oldestSentAt = sentAt
    }
  }
  if (idle !== undefined) return idle
  return canOpen ? undefined : oldest
}
