import {
  AgentStateError,
  type KeyState,
  type ListEntry,
  type StoredLease,
  type StoredValue,
  type ValueMeta,
  type WriterIdentity,
} from '@agent-state/core'

/**
 * Decoding the rows of the entries table. Statements return raw rows (arrays,
 * better-sqlite3's `.raw(true)`): cheaper than one object per row on the hot
 * paths. Each operation selects only the columns it needs, so each decoder
 * takes the cells of one statement, in that statement's column order (see
 * `statements.ts`). Cells are `unknown` on purpose: a row is checked before it
 * is trusted, and one that does not decode is `CORRUPT`, never treated as empty.
 */

/** One raw row: its cells in the selecting statement's column order. */
export type RawRow = readonly unknown[]

/** A key's state as read for a write, with what the write needs to update the row in place. */
export interface LoadedState {
  /** The row's rowid: the write updates it without a second primary-key lookup. */
  readonly rowid: number
  /** The state, with an empty `value`: no write reads the value it replaces. */
  readonly state: KeyState
  /** The stored value's size in bytes (0 for a deleted key). */
  readonly size: number
}

/** The value columns of a row, in the order the INSERT and the value UPDATE bind them. */
export type ValueParams = [
  version: string | null,
  revision: number,
  writer: string | null,
  updatedAt: number,
  size: number,
  value: Uint8Array | null,
]

/** The lease columns and fence of a row, in the order the INSERT and the lease UPDATE bind them. */
export type LeaseParams = [
  leaseHolder: string | null,
  leaseToken: number | null,
  leaseTtlMs: number | null,
  leaseExpiresAt: number | null,
  fence: number,
]

/** The bound parameters of an insert, in the order of the INSERT's columns after namespace and key. */
export type EntryParams = [...ValueParams, ...LeaseParams]

const EMPTY: Uint8Array = new Uint8Array(0)

function corrupt(key: string, problem: string, cause?: unknown): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Row of key ${JSON.stringify(key)} is corrupt: ${problem}`,
    cause === undefined ? { context: { key, problem } } : { context: { key, problem }, cause },
  )
}

const isInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value)

/**
 * Decoded writers by their stored JSON text. A writer is usually the same for
 * many rows (one agent), and parsing it was a noticeable part of a `get`.
 * The objects are frozen, so sharing one between metas is safe.
 */
const writerCache = new Map<string, WriterIdentity>()
const WRITER_CACHE_LIMIT = 256
const WRITER_FIELDS = ['stageId', 'sessionId', 'workerId'] as const

function decodeWriter(key: string, raw: unknown): WriterIdentity | null {
  if (raw === null) return null
  if (typeof raw !== 'string') throw corrupt(key, 'writer is not text')
  const known = writerCache.get(raw)
  if (known !== undefined) return known
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (cause) {
    throw corrupt(key, 'writer is not JSON', cause)
  }
  if (typeof parsed !== 'object' || parsed === null) throw corrupt(key, 'writer is not an object')
  const fields = parsed as Record<string, unknown>
  if (typeof fields.writerId !== 'string') throw corrupt(key, 'writer has no writerId')
  const writer: { -readonly [K in keyof WriterIdentity]: WriterIdentity[K] } = {
    writerId: fields.writerId,
  }
  for (const field of WRITER_FIELDS) {
    const cell = fields[field]
    if (cell === undefined) continue
    if (typeof cell !== 'string') throw corrupt(key, `writer.${field} is not text`)
    writer[field] = cell
  }
  const frozen = Object.freeze(writer)
  if (writerCache.size >= WRITER_CACHE_LIMIT) writerCache.clear()
  writerCache.set(raw, frozen)
  return frozen
}

/** The text stored in the `writer` column. */
function encodeWriter(writer: WriterIdentity | null): string | null {
  return writer === null ? null : JSON.stringify(writer)
}

function decodeMeta(
  key: string,
  version: unknown,
  writer: unknown,
  updatedAt: unknown,
  size: unknown,
): ValueMeta {
  if (typeof version !== 'string' || version.length === 0) throw corrupt(key, 'version is not text')
  if (typeof updatedAt !== 'number') throw corrupt(key, 'updated_at is not a number')
  if (!isInteger(size) || size < 0) throw corrupt(key, 'size is not an integer')
  return { key, version, size, writer: decodeWriter(key, writer), updatedAt }
}

/**
 * Decodes a `get` row (`version, writer, updated_at, size, value`): the value
 * and its meta, or `null` for a deleted key.
 */
export function decodeValueRow(key: string, row: RawRow): StoredValue | null {
  const value = row[4]
  if (row[0] === null) {
    if (value !== null) throw corrupt(key, 'a deleted key holds a value')
    return null
  }
  const meta = decodeMeta(key, row[0], row[1], row[2], row[3])
  if (!(value instanceof Uint8Array)) throw corrupt(key, 'value is not a blob')
  if (value.byteLength !== meta.size) throw corrupt(key, 'value length differs from its size')
  // A plain Uint8Array view of better-sqlite3's Buffer: callers compare it with Uint8Arrays.
  return { value: new Uint8Array(value.buffer, value.byteOffset, value.byteLength), meta }
}

/** Decodes a `head` row (`version, writer, updated_at, size`): the meta, or `null` for a deleted key. */
export function decodeMetaRow(key: string, row: RawRow): ValueMeta | null {
  if (row[0] === null) return null
  return decodeMeta(key, row[0], row[1], row[2], row[3])
}

function decodeLease(
  key: string,
  holder: unknown,
  token: unknown,
  ttlMs: unknown,
  expiresAt: unknown,
  fence: number,
): StoredLease | null {
  if (holder === null && token === null && ttlMs === null && expiresAt === null) return null
  if (
    typeof holder !== 'string' ||
    !isInteger(token) ||
    token < 1 ||
    !isInteger(ttlMs) ||
    typeof expiresAt !== 'number'
  ) {
    throw corrupt(key, 'lease columns are inconsistent')
  }
  if (token > fence) throw corrupt(key, 'lease token above the fence')
  return { holder, token, ttlMs, expiresAt }
}

function decodeFence(key: string, fence: unknown): number {
  if (!isInteger(fence) || fence < 0) throw corrupt(key, 'fence is not an integer')
  return fence
}

/**
 * Decodes a `getLease` row (`lease_holder, lease_token, lease_ttl_ms,
 * lease_expires_at, fence`): the stored lease, live or not, or `null`.
 */
export function decodeLeaseRow(key: string, row: RawRow): StoredLease | null {
  const fence = decodeFence(key, row[4])
  return decodeLease(key, row[0], row[1], row[2], row[3], fence)
}

/**
 * Decodes the row a write reads (`rowid, version, revision, writer,
 * updated_at, size, lease_holder, lease_token, lease_ttl_ms,
 * lease_expires_at, fence`): every column but the value.
 */
export function decodeStateRow(key: string, row: RawRow): LoadedState {
  const [rowid, version, revision, writer, updatedAt, size] = row
  if (!isInteger(rowid)) throw corrupt(key, 'rowid is not an integer')
  if (!(version === null || (typeof version === 'string' && version.length > 0))) {
    throw corrupt(key, 'version is not text')
  }
  if (!isInteger(revision) || revision < 0) throw corrupt(key, 'revision is not an integer')
  if (typeof updatedAt !== 'number') throw corrupt(key, 'updated_at is not a number')
  if (!isInteger(size) || size < 0) throw corrupt(key, 'size is not an integer')
  const fence = decodeFence(key, row[10])
  const lease = decodeLease(key, row[6], row[7], row[8], row[9], fence)
  return {
    rowid,
    state: {
      version,
      revision,
      writer: decodeWriter(key, writer),
      updatedAt,
      value: EMPTY,
      lease,
      fence,
    },
    size,
  }
}

/** The value columns that store `state`'s value (a deleted key's are `null` and 0). */
export function valueParams(state: KeyState): ValueParams {
  const live = state.version !== null
  return [
    state.version,
    state.revision,
    encodeWriter(state.writer),
    state.updatedAt,
    live ? state.value.byteLength : 0,
    live ? state.value : null,
  ]
}

/** The lease columns and fence that store `state`'s lease. */
export function leaseParams(state: KeyState): LeaseParams {
  const lease = state.lease
  return [
    lease?.holder ?? null,
    lease?.token ?? null,
    lease?.ttlMs ?? null,
    lease?.expiresAt ?? null,
    state.fence,
  ]
}

/** The insert parameters that store `state` in a new row. */
export function encodeState(state: KeyState): EntryParams {
  return [...valueParams(state), ...leaseParams(state)]
}

/** Decodes one listing row (`key, version, size, updated_at`) from the covering index. */
export function decodeListedRow(row: RawRow): ListEntry {
  const [key, version, size, updatedAt] = row
  if (typeof key !== 'string') throw corrupt(String(key), 'key is not text')
  if (typeof version !== 'string' || version.length === 0) throw corrupt(key, 'version is not text')
  if (!isInteger(size) || size < 0) throw corrupt(key, 'size is not an integer')
  if (typeof updatedAt !== 'number') throw corrupt(key, 'updated_at is not a number')
  return { key, version, size, updatedAt }
}
