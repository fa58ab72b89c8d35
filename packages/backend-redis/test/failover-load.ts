import { errorCodeOf } from '@agent-state/contract'
import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'

/**
 * Load and bookkeeping for the failover tier: compare-and-set increments and
 * lease cycles on the old primary, recorded as the client saw them (only
 * what was acknowledged counts), then checks on the promoted replica.
 */

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A lease the old primary acknowledged, and until when its holder could rely on it. */
interface HeldInterval {
  readonly key: string
  readonly token: number
  readonly grantedAt: number
  /** The acknowledged expiry, or the moment the holder sent its release. */
  end: number
}

/** What the clients of the old primary saw. */
export interface OldPrimaryLog {
  stopped: boolean
  /** Counter values whose compare-and-set was acknowledged. */
  readonly ackedValues: number[]
  readonly tokens: number[]
  readonly held: HeldInterval[]
  indeterminate: number
}

export function newLog(): OldPrimaryLog {
  return { stopped: false, ackedValues: [], tokens: [], held: [], indeterminate: 0 }
}

/** Reads the counter; `undefined` when absent. */
export async function readCounter(b: Backend, key: string): Promise<number | undefined> {
  const stored = await b.get(key)
  return stored === null ? undefined : Number(decoder.decode(stored.value))
}

/** Compare-and-set increments until the log is stopped; acknowledged values go to `ackedValues`. */
export async function casWorker(b: Backend, key: string, log: OldPrimaryLog): Promise<void> {
  while (!log.stopped) {
    let next = 0
    const step = (async () => {
      const current = await b.get(key)
      if (current === null) throw new Error('counter missing')
      next = Number(decoder.decode(current.value)) + 1
      await b.put(key, encoder.encode(String(next)), { ifMatch: current.meta.version })
    })()
    // A raw (non-contract) failure is rethrown by errorCodeOf and fails the trial.
    const code = await errorCodeOf(step)
    if (code === 'resolved') {
      log.ackedValues.push(next)
      continue
    }
    if (code === 'PRECONDITION_FAILED') continue
    if (code !== 'INDETERMINATE' && code !== 'UNAVAILABLE') await step
    log.indeterminate++
    if (!log.stopped) await sleep(5)
  }
}

/** Acquire, fenced put, renew, release, until stopped. */
export async function leaseWorker(
  b: Backend,
  key: string,
  holder: string,
  ttlMs: number,
  log: OldPrimaryLog,
): Promise<void> {
  while (!log.stopped) {
    const cycle = (async () => {
      const lease = await b.acquireLease(key, { holder, ttlMs })
      const interval: HeldInterval = {
        key,
        token: lease.token,
        grantedAt: lease.expiresAt - ttlMs,
        end: lease.expiresAt,
      }
      log.tokens.push(lease.token)
      log.held.push(interval)
      await b.put(key, encoder.encode(holder), { lease })
      await sleep(10)
      const renewed = await b.renewLease(lease)
      interval.end = renewed.expiresAt
      await sleep(10)
      // From here on the holder no longer relies on the lease.
      interval.end = Math.min(interval.end, Date.now())
      await b.releaseLease(renewed)
    })()
    const code = await errorCodeOf(cycle)
    if (code === 'resolved') continue
    if (code === 'LEASE_HELD') {
      await sleep(5)
      continue
    }
    // Anything else than these fails the trial with the original error.
    if (code !== 'INDETERMINATE' && code !== 'UNAVAILABLE' && code !== 'LEASE_LOST') await cycle
    log.indeterminate++
    if (!log.stopped) await sleep(5)
  }
}

/** One acquire on the old primary, logged as held when acknowledged (not when its outcome is unknown). */
export async function acquireLogged(
  b: Backend,
  key: string,
  holder: string,
  ttlMs: number,
  log: OldPrimaryLog,
): Promise<void> {
  const attempt = b.acquireLease(key, { holder, ttlMs })
  const code = await errorCodeOf(attempt)
  if (code === 'resolved') {
    const lease = await attempt
    log.tokens.push(lease.token)
    log.held.push({
      key,
      token: lease.token,
      grantedAt: lease.expiresAt - ttlMs,
      end: lease.expiresAt,
    })
    return
  }
  // Anything but an unknown outcome fails the trial with the original error.
  if (code !== 'INDETERMINATE' && code !== 'UNAVAILABLE') await attempt
  log.indeterminate++
}

/** The first grant on the promoted node, and whether its promotion hold refused it first. */
export interface FirstGrant {
  readonly lease: Lease
  /** Refusals with `context.promotionHold: true` before the grant. */
  readonly holdRefusals: number
  /** From the first attempt to the grant, on this host's clock. */
  readonly waitedMs: number
}

/** Acquires `key` on the promoted node, polling while it is held (by a lease or the hold). */
export async function firstGrant(
  b: Backend,
  key: string,
  ttlMs: number,
  timeoutMs: number,
): Promise<FirstGrant> {
  const started = Date.now()
  let holdRefusals = 0
  for (;;) {
    try {
      const lease = await b.acquireLease(key, { holder: 'new', ttlMs })
      return { lease, holdRefusals, waitedMs: Date.now() - started }
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_HELD') || Date.now() - started > timeoutMs) throw error
      if (error.context.promotionHold === true) holdRefusals++
    }
    await sleep(20)
  }
}

/** Acquires `key` on `b`, polling while it is held, for up to `timeoutMs`. */
export async function acquirePolling(
  b: Backend,
  key: string,
  holder: string,
  ttlMs: number,
  timeoutMs: number,
): Promise<Lease> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const attempt = b.acquireLease(key, { holder, ttlMs })
    const code = await errorCodeOf(attempt)
    // Resolved, or a failure other than a lease still held (or held too long): as it is.
    if (code !== 'LEASE_HELD' || Date.now() > deadline) return attempt
    await sleep(20)
  }
}

/** The findings of one trial on the promoted replica. */
export interface TrialFindings {
  readonly acked: number
  readonly lostAcked: number
  readonly grants: number
  readonly reissuedTokens: number
  readonly doubleHolders: number
  readonly staleAccepted: string[]
  readonly indeterminate: number
  /** Whether the promoted node recorded a promotion hold under its own replication id. */
  readonly holdRecorded: boolean
  /** The promoted node's first grant attempt: refusals by its promotion hold, and the wait. */
  readonly holdRefusals: number
  readonly firstGrantWaitMs: number
}

/** Grants on the new primary that an acknowledged lease on the old one could still hold. */
export function overlaps(log: OldPrimaryLog, key: string, newGrantAt: number): number {
  return log.held.filter((h) => h.key === key && h.end > newGrantAt).length
}

/** Counts acknowledged counter values above what the new primary holds. */
export function lostValues(log: OldPrimaryLog, found: number): number {
  return log.ackedValues.filter((v) => v > found).length
}

/** A stale holder's put, delete, renew and release on the new primary: each must be refused. */
export async function staleAttempts(b: Backend, stale: Lease): Promise<string[]> {
  const accepted: string[] = []
  const attempt = async (name: string, run: () => Promise<unknown>, refusedWith: string) => {
    const pending = run()
    const code = await errorCodeOf(pending)
    if (code === 'resolved') {
      if (refusedWith !== 'false' || (await pending) !== false) accepted.push(name)
    } else if (code !== refusedWith) {
      accepted.push(`${name}: ${code}`)
    }
  }
  await attempt(
    'put',
    () => b.put(stale.key, encoder.encode('stale'), { lease: stale }),
    'LEASE_LOST',
  )
  await attempt('delete', () => b.delete(stale.key, { lease: stale }), 'LEASE_LOST')
  await attempt('renew', () => b.renewLease(stale), 'LEASE_LOST')
  await attempt('release', () => b.releaseLease(stale), 'false')
  return accepted
}
