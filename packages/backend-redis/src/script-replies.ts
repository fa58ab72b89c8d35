import {
  AgentStateError,
  fenceLost,
  type Lease,
  quoteForMessage,
  type StoredValue,
  type ValueMeta,
  type WriterIdentity,
} from '@agent-state/core'
import { RECORD_FIELD } from './key-layout.js'

/*
 * Decoding of script replies and stored fields into contract values and
 * contract errors. A reply or field that does not decode is CORRUPT.
 */

/** A CORRUPT error for a key's record. */
export function corrupt(key: string, problem: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Redis record of key ${quoteForMessage(key)} is corrupt: ${problem}`,
    {
      context: { key, problem },
    },
  )
}

/** A stored integer field; CORRUPT when it is not one. */
export function toNumber(key: string, text: unknown, field: string): number {
  const n = typeof text === 'string' && text !== '' ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(n)) throw corrupt(key, `field ${field} is not an integer`)
  return n
}

/** Writer identity JSON from a record; null when absent, CORRUPT when unreadable. */
export function parseWriter(
  key: string,
  text: string | Buffer | null | undefined,
): WriterIdentity | null {
  if (text === null || text === undefined || text.length === 0) return null
  try {
    const parsed: unknown = JSON.parse(text.toString())
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      typeof (parsed as WriterIdentity).writerId === 'string'
    ) {
      return parsed as WriterIdentity
    }
  } catch {
    // reported below
  }
  throw corrupt(key, 'writer metadata is not valid JSON')
}

/**
 * Fields `get` reads of a key's hash, in this order, with one `HMGET` (the
 * native `getMany` reads the same, one `HMGET` per key).
 */
export const GET_FIELDS = [
  RECORD_FIELD.version,
  RECORD_FIELD.value,
  RECORD_FIELD.writer,
  RECORD_FIELD.updatedAt,
] as const

/**
 * The value of `key` from the reply of an `HMGET` of {@link GET_FIELDS}:
 * `null` when the hash holds no version (no value, or only a lease and its
 * fence); CORRUPT when a version has no value or a meta field does not decode.
 * The one decoding of `get` and `getMany`.
 */
export function storedValueOf(key: string, fields: readonly (Buffer | null)[]): StoredValue | null {
  const [version, value, writer, updatedAt] = fields
  if (version === null || version === undefined) return null
  if (value === null || value === undefined) throw corrupt(key, 'value missing')
  // Copy: reply buffers may share memory with other replies.
  const bytes = new Uint8Array(value)
  return {
    value: bytes,
    meta: {
      key,
      version: version.toString(),
      size: bytes.byteLength,
      writer: parseWriter(key, writer),
      updatedAt: toNumber(key, updatedAt?.toString(), 't'),
    },
  }
}

/**
 * The value size a version carries (`<revision>.<random>.<size>`, written by
 * 0.2 and later), or `undefined` for a 0.1 version (`<revision>.<random>`).
 */
export function sizeOfVersion(version: string): number | undefined {
  const last = version.lastIndexOf('.')
  if (last <= 0 || version.indexOf('.') === last) return undefined
  const part = version.slice(last + 1)
  if (!/^[0-9]{1,15}$/.test(part)) return undefined
  return Number(part)
}

/**
 * The layout of every script reply: the one place reply positions are named.
 * A reply is a flat array of strings, its status word first (`OK`, `NONE` or
 * a contract error code), then the fields in the order given here (the Lua
 * scripts in `lua-scripts.ts` build them in this order).
 */
export const REPLY = {
  /** put: OK version updatedAt. */
  put: ['status', 'version', 'updatedAt'],
  /** delete: OK existed (`'1'` when a value was removed, `'0'` otherwise). */
  delete: ['status', 'existed'],
  /** acquireLease: OK token expiresAt leaseId. */
  acquire: ['status', 'token', 'expiresAt', 'leaseId'],
  /** renewLease: OK holder ttlMs expiresAt. */
  renew: ['status', 'holder', 'ttlMs', 'expiresAt'],
  /** getLease: OK holder token ttlMs expiresAt, or NONE. */
  getLease: ['status', 'holder', 'token', 'ttlMs', 'expiresAt'],
  /** head of a 0.1 version: OK version size writer updatedAt, or NONE. */
  head: ['status', 'version', 'size', 'writer', 'updatedAt'],
  /** A refused acquire on a promoted node: PROMOTION_HOLD holdUntil. */
  promotionHold: ['status', 'holdUntil'],
  /** A refused write: LEASE_HELD holder expiresAt. */
  leaseHeld: ['status', 'holder', 'expiresAt'],
  /** A refused write: LEASE_LOST currentToken (`''` when there is no lease). */
  leaseLost: ['status', 'currentToken'],
  /** A refused fenced put: FENCE_LOST currentToken (the fence key's; `''` when it has no lease). */
  fenceLost: ['status', 'currentToken'],
  /** A refused write: PRECONDITION_FAILED version size writer updatedAt (all `''` when absent). */
  preconditionFailed: ['status', 'version', 'size', 'writer', 'updatedAt'],
  /** queueAppend: OK first stored. */
  queueAppend: ['status', 'first', 'stored'],
  /** queueClaim: OK headVersion token expiresAt leaseId holder ttlMs event head, or EMPTY. */
  queueClaim: [
    'status',
    'headVersion',
    'token',
    'expiresAt',
    'leaseId',
    'holder',
    'ttlMs',
    'event',
    'head',
  ],
  /** One entry of a listing batch (no status; the batch is a run of these). */
  listEntry: ['key', 'version', 'size', 'updatedAt'],
} as const

/** A reply read by name: every field of its layout, as a string. */
export type NamedReply<Layout extends readonly string[]> = {
  readonly [Name in Layout[number]]: string
}

/** A script reply as a flat array of strings; CORRUPT otherwise. */
export function reply(value: unknown, key: string): string[] {
  if (!Array.isArray(value)) throw corrupt(key, 'unexpected script reply')
  for (const item of value) {
    if (typeof item !== 'string') throw corrupt(key, 'unexpected script reply')
  }
  return value as string[]
}

/**
 * Reads `r` (from position `at`) by the names of `layout`; CORRUPT when the
 * reply is shorter than its layout.
 */
export function named<const Layout extends readonly string[]>(
  key: string,
  r: readonly string[],
  layout: Layout,
  at = 0,
): NamedReply<Layout> {
  if (r.length < at + layout.length) throw corrupt(key, `short ${layout[0]} reply`)
  const out: Record<string, string> = {}
  for (let i = 0; i < layout.length; i++) out[layout[i] as string] = r[at + i] as string
  return out as NamedReply<Layout>
}

/** The meta a failed precondition reports, from a `PRECONDITION_FAILED` reply. */
export function preconditionFailed(key: string, r: readonly string[]): AgentStateError {
  const f = named(key, r, REPLY.preconditionFailed)
  const current: ValueMeta | null =
    f.version === ''
      ? null
      : {
          key,
          version: f.version,
          size: toNumber(key, f.size, 'size'),
          writer: parseWriter(key, f.writer),
          updatedAt: toNumber(key, f.updatedAt, 't'),
        }
  return new AgentStateError(
    'PRECONDITION_FAILED',
    `Precondition failed for key ${quoteForMessage(key)}`,
    {
      context: { key, current },
    },
  )
}

/** The LEASE_HELD error for a key held by another holder. */
export function leaseHeld(key: string, holder: string, expiresAt: string): AgentStateError {
  return new AgentStateError(
    'LEASE_HELD',
    `Key ${quoteForMessage(key)} is leased by ${quoteForMessage(holder)}`,
    {
      context: { key, holder, expiresAt: toNumber(key, expiresAt, 'le') },
    },
  )
}

/**
 * The LEASE_HELD error of the promotion hold: the node serving the namespace
 * was promoted from replica and may lack a lease the old primary granted, so
 * it grants none on a key without a live lease until `holdUntil` (server ms).
 * LEASE_HELD because it is what a caller already handles by waiting for
 * `context.expiresAt` and retrying; the holder is unknown (`null`), and
 * `context.promotionHold: true` tells it apart.
 */
export function promotionHeld(key: string, holdUntil: string): AgentStateError {
  const until = toNumber(key, holdUntil, 'hu')
  return new AgentStateError(
    'LEASE_HELD',
    `Key ${quoteForMessage(key)} may still be leased on the primary this Redis node replaced: after its promotion it grants no new lease until ${new Date(until).toISOString()} (server clock)`,
    { context: { key, holder: null, expiresAt: until, promotionHold: true } },
  )
}

/** The LEASE_LOST error for a stale lease. */
export function leaseLost(key: string, token: number, current: string): AgentStateError {
  return new AgentStateError(
    'LEASE_LOST',
    `The lease on ${quoteForMessage(key)} is no longer current`,
    {
      context: {
        key,
        token,
        currentToken: current === '' ? null : Number(current),
      },
    },
  )
}

/**
 * The LEASE_LOST error of a stale fence, from a FENCE_LOST reply: core's
 * `fenceLost`, so every backend reports it alike. Its own status word in the
 * script, because a fenced put can also refuse on its own key's lease, and
 * the two must not be confused.
 */
export function fenceLostOf(key: string, fence: Lease, r: readonly string[]): AgentStateError {
  const { currentToken } = named(key, r, REPLY.fenceLost)
  return fenceLost(
    key,
    fence,
    currentToken === '' ? null : toNumber(fence.key, currentToken, RECORD_FIELD.leaseToken),
  )
}

/**
 * The lease id to send: the one the backend gave at acquisition, or '' for a
 * lease without one (a 0.1/0.2 grant, judged by its token alone; a current
 * grant refuses it).
 */
export function leaseIdOf(lease: Lease | undefined): string {
  return lease !== undefined && typeof lease.leaseId === 'string' ? lease.leaseId : ''
}

/** Throws the contract error a write script replied with (anything but `OK`). */
export function throwWriteFailure(
  key: string,
  r: readonly string[],
  lease: Lease | undefined,
): never {
  switch (r[0]) {
    case 'LEASE_HELD': {
      const f = named(key, r, REPLY.leaseHeld)
      throw leaseHeld(key, f.holder, f.expiresAt)
    }
    case 'LEASE_LOST':
      throw leaseLost(key, lease?.token ?? 0, named(key, r, REPLY.leaseLost).currentToken)
    case 'PRECONDITION_FAILED':
      throw preconditionFailed(key, r)
    case 'PROMOTION_HOLD':
      throw promotionHeld(key, named(key, r, REPLY.promotionHold).holdUntil)
    case 'CORRUPT_META':
      throw new AgentStateError(
        'CORRUPT',
        'The Redis meta hash of this namespace is corrupt: unreadable promotion hold or longest lease TTL',
        { context: { key, problem: 'unreadable promotion hold or longest lease TTL' } },
      )
    default:
      throw corrupt(key, `unexpected script status ${JSON.stringify(r[0])}`)
  }
}
