import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { runtimeError } from '../shared/errors.js'

/**
 * The leases that make a run's owner the only writer of its records.
 *
 * A contract lease fences writes to its own key only, and a run writes one
 * record per effect and per step. So every record key the run writes gets
 * its own lease, held by the same holder and subordinate to one *root* lease
 * (the run head's, or a parent's such as a worker snapshot's): each record
 * lease is acquired first and the root renewed right after it, and a
 * heartbeat renews the record leases before the root. Every record lease
 * therefore expires no later than the root (both on the backend's lease
 * clock), so once a contender holds the root, every lease of the old owner
 * is stale and each of its fenced writes fails with `LEASE_LOST`.
 */
export class RunOwnership {
  readonly #backend: Backend
  #root: Lease
  readonly #ownsRoot: boolean
  readonly #held = new Map<string, Lease>()
  /** Leases of records that became final: no longer renewed, released by `release()`. */
  readonly #settled: Lease[] = []

  constructor(backend: Backend, root: Lease, ownsRoot: boolean) {
    this.#backend = backend
    this.#root = root
    this.#ownsRoot = ownsRoot
  }

  /** The root lease (its token orders the run's attempts when the run owns it). */
  get root(): Lease {
    return this.#root
  }

  /**
   * The lease to fence a write of `key` with: the root itself for the root
   * key, a held lease, or a fresh one (then the root is renewed after it).
   *
   * @throws `RUN_OWNED` when another holder leases the key; `LEASE_LOST` when the root is lost.
   */
  async leaseFor(key: string): Promise<Lease> {
    if (key === this.#root.key) return this.#root
    const held = this.#held.get(key)
    if (held !== undefined) return held
    let lease: Lease
    try {
      lease = await this.#backend.acquireLease(key, {
        holder: this.#root.holder,
        ttlMs: this.#root.ttlMs,
      })
    } catch (error) {
      if (isAgentStateError(error, 'LEASE_HELD')) {
        throw runtimeError(
          'RUN_OWNED',
          `The run record ${key} is leased by ${String(error.context.holder)}`,
          { key, holder: error.context.holder ?? null, expiresAt: error.context.expiresAt ?? null },
          error,
        )
      }
      throw error
    }
    this.#held.set(key, lease)
    try {
      this.#root = await this.#backend.renewLease(this.#root)
    } catch (error) {
      this.#held.delete(key)
      await this.#backend.releaseLease(lease).catch(() => false)
      throw error
    }
    return lease
  }

  /**
   * Stops renewing `key`'s lease: its record is final and is never written
   * again by this owner. The lease is released with the others by `release()`.
   */
  forget(key: string): void {
    const lease = this.#held.get(key)
    if (lease === undefined) return
    this.#held.delete(key)
    this.#settled.push(lease)
  }

  /** Renews every record lease, then the root, keeping the record leases subordinate. */
  async heartbeat(): Promise<void> {
    for (const [key, lease] of this.#held) {
      this.#held.set(key, await this.#backend.renewLease(lease))
    }
    this.#root = await this.#backend.renewLease(this.#root)
  }

  /**
   * Releases every record lease this owner took (final records' included, so
   * nothing of the run stays leased), then the root when the run took it.
   * Failures only delay the next owner until the lease expires.
   */
  async release(): Promise<void> {
    for (const lease of [...this.#settled, ...this.#held.values()]) {
      await this.#backend.releaseLease(lease).catch(() => false)
    }
    this.#settled.length = 0
    this.#held.clear()
    if (this.#ownsRoot) await this.#backend.releaseLease(this.#root).catch(() => false)
  }
}
