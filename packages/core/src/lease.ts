// The lease is its own file so that the contract's parts that hold one (native-queue.ts) need not
// import backend.ts, which imports them.

/**
 * A lease on a key (snapshot leasing). A lease attaches to a key whether or
 * not the key holds a value.
 */
export interface Lease {
  readonly key: string
  /** Who holds it: free text chosen by the caller, 1 to 256 characters. */
  readonly holder: string
  /**
   * Fencing token: strictly increasing per key across every acquisition, also
   * after release, expiry, delete and (for a durable backend) restart.
   * Renewing keeps it.
   */
  readonly token: number
  /** Time-to-live used at acquisition and at every renewal, in milliseconds. */
  readonly ttlMs: number
  /**
   * When the lease expires, in milliseconds since the epoch, on the clock the
   * backend declares in `capabilities.leaseClock`. For the `observer` model it
   * is an estimate on the local clock. The lease is live while the clock reads
   * less than `expiresAt` and expired from `expiresAt` on (on a `host` clock:
   * live at `expiresAt - 1`, expired at `expiresAt`; `expiresAt` is the
   * acquisition or renewal time plus `ttlMs`).
   */
  readonly expiresAt: number
  /**
   * Opaque identity of this grant, set by backends that can re-issue a token
   * number after a failover (Redis). Pass the lease object back unchanged:
   * such a backend refuses a fenced write, renew or release whose `leaseId`
   * does not match the stored grant. Backends that never set it ignore it.
   */
  readonly leaseId?: string
}
