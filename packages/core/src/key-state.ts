import { randomBytes } from 'node:crypto'
import type {
  AcquireLeaseOptions,
  DeleteOptions,
  Lease,
  PutOptions,
  ValueMeta,
  WriterIdentity,
} from './backend.js'
import { fenceLost } from './cross-key-fence.js'
import { AgentStateError } from './errors.js'
import { quoteForMessage } from './keys.js'
import type { KeyState, StoredLease } from './record-codec.js'

/**
 * The contract's rules as pure transitions of one key's state. The memory
 * backend applies them synchronously; `createRecordBackend` applies them
 * between a read and a conditional write. Keeping them in one place means the
 * two levels cannot drift apart.
 */

const EMPTY = new Uint8Array(0)

/** A key that has never been written: no value, no lease, no tokens issued. */
export const ABSENT_STATE: KeyState = {
  version: null,
  revision: 0,
  writer: null,
  updatedAt: 0,
  value: EMPTY,
  lease: null,
  fence: 0,
}

/**
 * A fresh version for revision `revision`. The revision makes versions unique
 * while the key's record exists. A key starts again at revision 1 whenever
 * its record is gone (removed by a delete on a store with
 * `RecordStore.remove`, or after `destroy`), so the first version of a record
 * carries 96 random bits from the CSPRNG instead of 48: a later create can
 * then not repeat an earlier create's version (the odds are those of a UUID
 * collision), which is what makes removing a record instead of keeping a
 * tombstone safe for compare-and-set.
 */
export function newVersion(revision: number): string {
  const suffix = revision === 1 ? `${randomSuffix()}${randomSuffix()}` : randomSuffix()
  return `${revision.toString(36)}.${suffix}`
}

/**
 * Random suffixes cut from one base64url string of pooled CSPRNG bytes: one
 * `randomBytes(6)` call per write was most of an in-memory put's CPU
 * (benchmarks/FINDINGS.md), and one `Buffer#toString` per suffix was still
 * about 0.5 µs of it. 4092 bytes (a multiple of 3 and of 6) encode to 5456
 * characters without padding, and every 8 characters are exactly 6 of the
 * bytes, so each suffix is what encoding its own 6 bytes would give.
 */
const POOL_BYTES = 4092
const SUFFIX_CHARS = 8
let pool = ''
let poolOffset = 0

/**
 * The random part of a version: 6 bytes from the CSPRNG as 8 base64url
 * characters (never a `.`, so backends may use `.` to separate the parts of
 * their versions), drawn from a pooled string.
 */
export function randomSuffix(): string {
  if (poolOffset + SUFFIX_CHARS > pool.length) {
    pool = randomBytes(POOL_BYTES).toString('base64url')
    poolOffset = 0
  }
  const suffix = pool.slice(poolOffset, poolOffset + SUFFIX_CHARS)
  poolOffset += SUFFIX_CHARS
  return suffix
}

/** The meta of a key's value, or `null` when it holds none. */
export function metaOf(key: string, state: KeyState): ValueMeta | null {
  if (state.version === null) return null
  return {
    key,
    version: state.version,
    size: state.value.byteLength,
    writer: state.writer,
    updatedAt: state.updatedAt,
  }
}

function toLease(key: string, lease: StoredLease): Lease {
  return {
    key,
    holder: lease.holder,
    token: lease.token,
    ttlMs: lease.ttlMs,
    expiresAt: lease.expiresAt,
  }
}

/** The key's live lease at `now`, or `null`. */
export function liveLease(key: string, state: KeyState, now: number): Lease | null {
  return state.lease !== null && state.lease.expiresAt > now ? toLease(key, state.lease) : null
}

/**
 * Throws unless a write to the key is allowed by its lease: with no lease
 * given, no live lease may exist (`LEASE_HELD`); with a lease given, it must
 * be the current, unexpired one (`LEASE_LOST`).
 */
export function checkWriteLease(
  key: string,
  state: KeyState,
  given: Lease | undefined,
  now: number,
): void {
  const current = state.lease
  if (given === undefined) {
    if (current !== null && current.expiresAt > now) {
      throw new AgentStateError(
        'LEASE_HELD',
        `Key ${quoteForMessage(key)} is leased by another holder`,
        {
          context: { key, holder: current.holder, expiresAt: current.expiresAt },
        },
      )
    }
    return
  }
  if (current === null || current.token !== given.token || current.expiresAt <= now) {
    throw new AgentStateError(
      'LEASE_LOST',
      `The lease on ${quoteForMessage(key)} is no longer current`,
      {
        context: { key, token: given.token, currentToken: current?.token ?? null },
      },
    )
  }
}

/**
 * Throws `LEASE_LOST` unless `fence` is the current, unexpired lease of its
 * key, whose state is `fenceState` (`PutOptions.fence`). Tokens decide, never
 * holder names.
 */
export function checkFence(key: string, fence: Lease, fenceState: KeyState, now: number): void {
  const current = fenceState.lease
  if (current === null || current.token !== fence.token || current.expiresAt <= now) {
    throw fenceLost(key, fence, current?.token ?? null)
  }
}

function checkPrecondition(
  key: string,
  state: KeyState,
  options: { ifMatch?: string; ifNoneMatch?: '*' },
): void {
  const failed =
    (options.ifMatch !== undefined && state.version !== options.ifMatch) ||
    (options.ifNoneMatch === '*' && state.version !== null)
  if (failed) {
    throw new AgentStateError(
      'PRECONDITION_FAILED',
      `Precondition failed for key ${quoteForMessage(key)}`,
      {
        context: { key, current: metaOf(key, state) },
      },
    )
  }
}

/** The state after a successful `put`; throws as the contract says. */
export function applyPut(
  key: string,
  state: KeyState,
  value: Uint8Array,
  writer: WriterIdentity | null,
  options: PutOptions | undefined,
  now: number,
): KeyState {
  checkWriteLease(key, state, options?.lease, now)
  if (options !== undefined) checkPrecondition(key, state, options)
  const revision = state.revision + 1
  return {
    version: newVersion(revision),
    revision,
    writer,
    updatedAt: now,
    value,
    lease: state.lease,
    fence: state.fence,
  }
}

/**
 * The state after a successful `delete`, or `undefined` when nothing changes
 * (no value). The lease and fencing counter stay: tokens must keep growing.
 */
export function applyDelete(
  key: string,
  state: KeyState,
  options: DeleteOptions | undefined,
  now: number,
): KeyState | undefined {
  checkWriteLease(key, state, options?.lease, now)
  if (options?.ifMatch !== undefined) checkPrecondition(key, state, { ifMatch: options.ifMatch })
  if (state.version === null) return undefined
  return {
    ...state,
    version: null,
    revision: state.revision + 1,
    writer: null,
    updatedAt: now,
    value: EMPTY,
  }
}

/** The state and lease after a successful `acquireLease`; throws `LEASE_HELD` otherwise. */
export function applyAcquire(
  key: string,
  state: KeyState,
  options: AcquireLeaseOptions,
  now: number,
): { state: KeyState; lease: Lease } {
  const current = state.lease
  if (current !== null && current.expiresAt > now) {
    throw new AgentStateError(
      'LEASE_HELD',
      `Key ${quoteForMessage(key)} is leased by ${quoteForMessage(current.holder)}`,
      {
        context: { key, holder: current.holder, expiresAt: current.expiresAt },
      },
    )
  }
  const stored: StoredLease = {
    holder: options.holder,
    token: state.fence + 1,
    ttlMs: options.ttlMs,
    expiresAt: now + options.ttlMs,
  }
  return { state: { ...state, lease: stored, fence: stored.token }, lease: toLease(key, stored) }
}

/** The state and lease after a successful `renewLease`; throws `LEASE_LOST` otherwise. */
export function applyRenew(
  state: KeyState,
  lease: Lease,
  now: number,
): { state: KeyState; lease: Lease } {
  const current = state.lease
  if (current === null || current.token !== lease.token || current.expiresAt <= now) {
    throw new AgentStateError(
      'LEASE_LOST',
      `The lease on ${quoteForMessage(lease.key)} is no longer current`,
      {
        context: { key: lease.key, token: lease.token, currentToken: current?.token ?? null },
      },
    )
  }
  const stored: StoredLease = { ...current, expiresAt: now + current.ttlMs }
  return { state: { ...state, lease: stored }, lease: toLease(lease.key, stored) }
}

/** The state after `releaseLease`, or `undefined` when the lease is not the current one. */
export function applyRelease(state: KeyState, lease: Lease): KeyState | undefined {
  if (state.lease === null || state.lease.token !== lease.token) return undefined
  return { ...state, lease: null }
}
