import type {
  AcquireLeaseOptions,
  DeleteOptions,
  Lease,
  ListOptions,
  PutOptions,
  WriterIdentity,
} from './backend.js'
import { type CursorPosition, decodeCursor } from './cursor.js'
import { AgentStateError } from './errors.js'
import { assertValidKey } from './keys.js'

/**
 * Argument checks shared by every backend, so they all reject the same bad
 * input with the same code before touching storage. Hand-written rather than
 * zod: these run on every operation.
 */

/** Page size of `list` when no `limit` is given. */
export const DEFAULT_LIST_LIMIT = 1000
/** Largest `limit` of `list`; more is `INVALID_ARGUMENT`. */
export const MAX_LIST_LIMIT = 10_000
/** Smallest lease `ttlMs`. */
export const MIN_LEASE_TTL_MS = 1
/** Largest lease `ttlMs` (24 h); more is `INVALID_ARGUMENT`. */
export const MAX_LEASE_TTL_MS = 24 * 60 * 60 * 1000
const MAX_ID_LENGTH = 256

function invalid(message: string, context: Record<string, unknown> = {}): AgentStateError {
  return new AgentStateError('INVALID_ARGUMENT', message, { context })
}

function checkId(value: unknown, what: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_ID_LENGTH) {
    throw invalid(`${what} must be a string of 1 to ${MAX_ID_LENGTH} characters`)
  }
}

/** Throws `INVALID_ARGUMENT` / `VALUE_TOO_LARGE` unless `value` is bytes within the limit. */
export function assertValue(value: unknown, maxValueBytes: number): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalid('a value must be a Uint8Array')
  if (value.byteLength > maxValueBytes) {
    throw new AgentStateError(
      'VALUE_TOO_LARGE',
      `a value of ${value.byteLength} bytes exceeds the backend's limit of ${maxValueBytes}`,
      { context: { size: value.byteLength, maxValueBytes } },
    )
  }
}

/**
 * Validates a writer identity and returns a frozen copy holding only the known
 * fields (frozen because backends hand the same object back in every meta).
 */
export function normalizeWriter(writer: unknown): WriterIdentity {
  if (typeof writer !== 'object' || writer === null) throw invalid('writer must be an object')
  const w = writer as Record<string, unknown>
  checkId(w.writerId, 'writer.writerId')
  const out: { -readonly [K in keyof WriterIdentity]: WriterIdentity[K] } = {
    writerId: w.writerId as string,
  }
  for (const field of ['stageId', 'sessionId', 'workerId'] as const) {
    if (w[field] !== undefined) {
      checkId(w[field], `writer.${field}`)
      out[field] = w[field] as string
    }
  }
  return Object.freeze(out)
}

/** Validates a lease passed back by a caller, and that it belongs to `key` when given. */
export function assertLeaseShape(lease: unknown, key?: string): asserts lease is Lease {
  if (typeof lease !== 'object' || lease === null) throw invalid('lease must be a Lease object')
  const l = lease as Record<string, unknown>
  if (typeof l.key !== 'string') throw invalid('lease.key must be a string')
  checkId(l.holder, 'lease.holder')
  if (!Number.isSafeInteger(l.token) || (l.token as number) < 1) {
    throw invalid('lease.token must be a positive integer')
  }
  if (!Number.isSafeInteger(l.ttlMs)) throw invalid('lease.ttlMs must be an integer')
  if (typeof l.expiresAt !== 'number') throw invalid('lease.expiresAt must be a number')
  if (key !== undefined && l.key !== key) {
    throw invalid('the lease belongs to another key', { key, leaseKey: l.key })
  }
}

function assertPrecondition(options: { ifMatch?: unknown; ifNoneMatch?: unknown }): void {
  if (options.ifMatch !== undefined) {
    if (typeof options.ifMatch !== 'string' || options.ifMatch.length === 0) {
      throw invalid('ifMatch must be a non-empty version string')
    }
    if (options.ifNoneMatch !== undefined)
      throw invalid('ifMatch and ifNoneMatch exclude each other')
  }
  if (options.ifNoneMatch !== undefined && options.ifNoneMatch !== '*') {
    throw invalid("ifNoneMatch must be '*'")
  }
}

/**
 * Validates a `put`'s `fence`: a lease on another key, not given with `lease`
 * (a write names one lease or the other; see `PutOptions.fence`).
 */
function assertFenceShape(key: string, options: PutOptions): void {
  assertLeaseShape(options.fence)
  assertValidKey(options.fence.key)
  if (options.lease !== undefined) throw invalid('fence and lease cannot be given together')
  if (options.fence.key === key) {
    throw invalid('fence must be a lease on another key; a lease on the written key is `lease`', {
      key,
    })
  }
}

/** Validates `put`'s key, value and options; returns the writer (or null). */
export function checkPut(
  key: unknown,
  value: unknown,
  options: PutOptions | undefined,
  limits: { maxKeyBytes: number; maxValueBytes: number },
): WriterIdentity | null {
  assertValidKey(key, limits.maxKeyBytes)
  assertValue(value, limits.maxValueBytes)
  return checkPutOptions(key, options)
}

/**
 * Validates `put`'s options alone, for a key already known valid (a backend
 * that validated it when it was stored); returns the writer (or null).
 */
export function checkPutOptions(
  key: string,
  options: PutOptions | undefined,
): WriterIdentity | null {
  if (options === undefined) return null
  if (typeof options !== 'object' || options === null) throw invalid('options must be an object')
  assertPrecondition(options)
  if (options.lease !== undefined) assertLeaseShape(options.lease, key)
  if (options.fence !== undefined) assertFenceShape(key, options)
  return options.writer === undefined ? null : normalizeWriter(options.writer)
}

/** Validates `delete`'s key and options. */
export function checkDelete(
  key: unknown,
  options: DeleteOptions | undefined,
  maxKeyBytes: number,
): void {
  assertValidKey(key, maxKeyBytes)
  if (options === undefined) return
  if (typeof options !== 'object' || options === null) throw invalid('options must be an object')
  assertPrecondition({ ifMatch: options.ifMatch })
  if (options.lease !== undefined) assertLeaseShape(options.lease, key)
}

/** Validates `acquireLease`'s arguments. */
export function checkAcquire(
  key: unknown,
  options: AcquireLeaseOptions,
  maxKeyBytes: number,
): void {
  assertValidKey(key, maxKeyBytes)
  if (typeof options !== 'object' || options === null) throw invalid('options must be an object')
  checkId(options.holder, 'holder')
  if (
    !Number.isSafeInteger(options.ttlMs) ||
    options.ttlMs < MIN_LEASE_TTL_MS ||
    options.ttlMs > MAX_LEASE_TTL_MS
  ) {
    throw invalid(`ttlMs must be an integer from ${MIN_LEASE_TTL_MS} to ${MAX_LEASE_TTL_MS}`)
  }
}

/** `list` options after validation and defaults. */
export interface NormalizedListOptions {
  readonly prefix: string
  readonly position: CursorPosition | undefined
  readonly limit: number
  readonly delimiter: '/' | undefined
}

/** Validates `list` options and applies defaults. */
export function normalizeListOptions(options: ListOptions | undefined): NormalizedListOptions {
  const o = options ?? {}
  if (typeof o !== 'object' || o === null) throw invalid('options must be an object')
  if (o.prefix !== undefined && typeof o.prefix !== 'string')
    throw invalid('prefix must be a string')
  const limit = o.limit ?? DEFAULT_LIST_LIMIT
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw invalid(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}`)
  }
  if (o.delimiter !== undefined && o.delimiter !== '/') throw invalid("delimiter must be '/'")
  if (o.cursor !== undefined && typeof o.cursor !== 'string')
    throw invalid('cursor must be a string')
  return {
    prefix: o.prefix ?? '',
    position: o.cursor === undefined ? undefined : decodeCursor(o.cursor),
    limit,
    delimiter: o.delimiter,
  }
}
