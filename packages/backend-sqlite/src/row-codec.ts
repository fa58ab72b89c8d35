import {
  AgentStateError,
  type KeyState,
  type ListEntry,
  quoteForMessage,
  type StoredLease,
  type StoredValue,
  type ValueMeta,
  type WriterIdentity,
} from '@agent-state/core'

import {
  listCheck,
  META_CHECK_CELLS,
  META_CHECK_COLUMNS,
  metaCheck,
  metaCheckAt,
  ROW_CHECK_CELLS,
  ROW_CHECK_COLUMNS,
  rowCheck,
  rowCheckAt,
  valueCrc,
} from './row-checks.js'

/**
 * Decoding the rows of the entries table. Statements return raw rows (arrays,
 * better-sqlite3's `.raw(true)`): cheaper than one object per row on the hot
 * paths. Each operation selects only the columns it needs, so each decoder
 * takes the cells of one statement, in that statement's column order (see
 * `statements.ts`). Cells are `unknown` on purpose: a row is checked before it
 * is trusted, and one that does not decode, or whose integrity check (see
 * `row-checks.ts`) does not match, is `CORRUPT`, never treated as empty.
 *
 * Every whole-row read selects the same cells first ({@link STATE_COLUMNS}):
 * `version, revision, writer, updated_at, size, value_crc, lease_holder,
 * lease_token, lease_ttl_ms, lease_expires_at, fence, row_check`. `get` and
 * `head` select {@link META_COLUMNS} first: `version, writer, updated_at,
 * size, value_crc, meta_check`.
 */

/** One raw row: its cells in the selecting statement's column order. */
export type RawRow = readonly unknown[]

/** The cells every whole-row read selects first, in this order. */
export const STATE_COLUMNS = `${ROW_CHECK_COLUMNS}, row_check`

/** The cells `get` and `head` select first, in this order (`get` then selects `value`). */
export const META_COLUMNS = `${META_CHECK_COLUMNS}, meta_check`

/**
 * What a {@link META_COLUMNS} decoder returns when `meta_check` does not
 * match: the caller reads the whole row and verifies it by `row_check`
 * instead. That row is either damaged (`CORRUPT` there too: `row_check`
 * covers every meta cell) or consistent, as a row written by a process of
 * schema version 2 still running after the migration (no or a stale
 * `meta_check`), or one whose only damage is its `meta_check`.
 */
export const UNVERIFIED: unique symbol = Symbol('unverified meta cells')

/** A key's state as read for a write, with what the write needs to update the row in place. */
export interface LoadedState {
  /** The row's rowid: the write updates it without a second primary-key lookup. */
  readonly rowid: number
  /** The state, with an empty `value`: no write reads the value it replaces. */
  readonly state: KeyState
  /** The stored value's size in bytes (0 for a deleted key). */
  readonly size: number
  /** The stored `value_crc`: a write that keeps the value keeps it. */
  readonly valueCrc: number
  /** The stored writer text, exactly as the row check covers it. */
  readonly writerText: string | null
}

/** The value columns of a row, in the order the INSERT and the value UPDATE bind them. */
export type ValueParams = [
  version: string | null,
  revision: number,
  writer: string | null,
  updatedAt: number,
  size: number,
  value: Uint8Array | null,
  valueCrc: number,
  listCheck: number,
  metaCheck: number,
  rowCheck: number,
]

/** The lease columns and fence of a row, then its row check, as the lease UPDATE binds them. */
export type LeaseParams = [
  leaseHolder: string | null,
  leaseToken: number | null,
  leaseTtlMs: number | null,
  leaseExpiresAt: number | null,
  fence: number,
  rowCheck: number,
]

/** The bound parameters of an insert, in the order of the INSERT's columns after namespace and key. */
export type EntryParams = [
  ...ValueParams,
  leaseHolder: string | null,
  leaseToken: number | null,
  leaseTtlMs: number | null,
  leaseExpiresAt: number | null,
  fence: number,
]

const EMPTY: Uint8Array = new Uint8Array(0)

function corrupt(key: string, problem: string, cause?: unknown): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Row of key ${quoteForMessage(key)} is corrupt: ${problem}`,
    cause === undefined ? { context: { key, problem } } : { context: { key, problem }, cause },
  )
}

/**
 * The `CORRUPT` of a key the primary key finds no row for while the listing
 * index has it live: the primary index is damaged (a miss is only an answer
 * when both b-trees agree).
 */
export function missingFromPrimaryIndex(key: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Row of key ${quoteForMessage(key)} is corrupt: the listing index has it but the primary key finds no row`,
    { context: { key, problem: 'missing from the primary index' } },
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
 * Checks the row check of the {@link STATE_COLUMNS} cells at `offset` in
 * `row`, before anything in them is trusted.
 */
function verifyRow(namespace: string, key: string, row: RawRow, offset: number): void {
  const stored = row[offset + ROW_CHECK_CELLS]
  if (stored !== rowCheckAt(namespace, key, row, offset)) {
    throw corrupt(key, 'the row does not match its integrity check')
  }
}

/** A value's meta cells, verified and decoded. */
interface MetaCells {
  readonly version: string | null
  readonly writer: WriterIdentity | null
  readonly updatedAt: number
  readonly size: number
  readonly valueCrc: number
  readonly writerText: string | null
}

/** Decodes verified meta cells, wherever a statement selected them. */
function decodeMetaCells(
  key: string,
  version: unknown,
  writerText: unknown,
  updatedAt: unknown,
  size: unknown,
  crc: unknown,
): MetaCells {
  if (!(version === null || (typeof version === 'string' && version.length > 0))) {
    throw corrupt(key, 'version is not text')
  }
  if (typeof updatedAt !== 'number') throw corrupt(key, 'updated_at is not a number')
  if (!isInteger(size) || size < 0) throw corrupt(key, 'size is not an integer')
  if (!isInteger(crc) || crc < 0) throw corrupt(key, 'value_crc is not an integer')
  if (writerText !== null && typeof writerText !== 'string')
    throw corrupt(key, 'writer is not text')
  const writer = decodeWriter(key, writerText)
  return { version, writer, updatedAt, size, valueCrc: crc, writerText }
}

/** Decodes verified {@link STATE_COLUMNS} cells at `offset` into a state without its value. */
function decodeState(key: string, row: RawRow, offset: number) {
  const revision = row[offset + 1]
  if (!isInteger(revision) || revision < 0) throw corrupt(key, 'revision is not an integer')
  const meta = decodeMetaCells(
    key,
    row[offset],
    row[offset + 2],
    row[offset + 3],
    row[offset + 4],
    row[offset + 5],
  )
  const fence = decodeFence(key, row[offset + 10])
  const lease = decodeLease(
    key,
    row[offset + 6],
    row[offset + 7],
    row[offset + 8],
    row[offset + 9],
    fence,
  )
  const state: KeyState = {
    version: meta.version,
    revision,
    writer: meta.writer,
    updatedAt: meta.updatedAt,
    value: EMPTY,
    lease,
    fence,
  }
  return { state, meta }
}

function metaOf(key: string, meta: MetaCells): ValueMeta {
  return {
    key,
    version: meta.version as string,
    size: meta.size,
    writer: meta.writer,
    updatedAt: meta.updatedAt,
  }
}

/** The value and meta of a key whose meta cells are verified; `null` for a deleted key. */
function storedValue(key: string, meta: MetaCells, value: unknown): StoredValue | null {
  if (meta.version === null) {
    if (value !== null) throw corrupt(key, 'a deleted key holds a value')
    return null
  }
  if (!(value instanceof Uint8Array)) throw corrupt(key, 'value is not a blob')
  if (value.byteLength !== meta.size) throw corrupt(key, 'value length differs from its size')
  if (valueCrc(value) !== meta.valueCrc) {
    throw corrupt(key, 'the value does not match its checksum')
  }
  // A plain Uint8Array view of better-sqlite3's Buffer: callers compare it with Uint8Arrays.
  return {
    value: new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
    meta: metaOf(key, meta),
  }
}

/** The {@link META_COLUMNS} cells at the start of `row`, or {@link UNVERIFIED}. */
function verifiedMeta(namespace: string, key: string, row: RawRow): MetaCells | typeof UNVERIFIED {
  if (row[META_CHECK_CELLS] !== metaCheckAt(namespace, key, row, 0)) return UNVERIFIED
  return decodeMetaCells(key, row[0], row[1], row[2], row[3], row[4])
}

/**
 * Decodes a `get` row ({@link META_COLUMNS}, then `value`): the value and its
 * meta, `null` for a deleted key, or {@link UNVERIFIED}. The value must match
 * `value_crc`.
 */
export function decodeValueRow(
  namespace: string,
  key: string,
  row: RawRow,
): StoredValue | null | typeof UNVERIFIED {
  const meta = verifiedMeta(namespace, key, row)
  return meta === UNVERIFIED ? meta : storedValue(key, meta, row[META_CHECK_CELLS + 1])
}

/** Decodes a `head` row ({@link META_COLUMNS}): the meta, `null` for a deleted key, or {@link UNVERIFIED}. */
export function decodeMetaRow(
  namespace: string,
  key: string,
  row: RawRow,
): ValueMeta | null | typeof UNVERIFIED {
  const meta = verifiedMeta(namespace, key, row)
  if (meta === UNVERIFIED) return meta
  return meta.version === null ? null : metaOf(key, meta)
}

/**
 * Decodes a whole `get` row ({@link STATE_COLUMNS}, then `value`), verified
 * by `row_check`: read when the meta cells do not verify.
 */
export function decodeWholeValueRow(
  namespace: string,
  key: string,
  row: RawRow,
): StoredValue | null {
  verifyRow(namespace, key, row, 0)
  return storedValue(key, decodeState(key, row, 0).meta, row[ROW_CHECK_CELLS + 1])
}

/** Decodes a whole `head` row ({@link STATE_COLUMNS}), verified by `row_check`. */
export function decodeWholeMetaRow(namespace: string, key: string, row: RawRow): ValueMeta | null {
  verifyRow(namespace, key, row, 0)
  const { meta } = decodeState(key, row, 0)
  return meta.version === null ? null : metaOf(key, meta)
}

/** Decodes a `getLease` row ({@link STATE_COLUMNS}): the stored lease, live or not, or `null`. */
export function decodeLeaseRow(namespace: string, key: string, row: RawRow): StoredLease | null {
  verifyRow(namespace, key, row, 0)
  return decodeState(key, row, 0).state.lease
}

/** Decodes the row a write reads (`rowid`, then {@link STATE_COLUMNS}): every column but the value. */
export function decodeStateRow(namespace: string, key: string, row: RawRow): LoadedState {
  const rowid = row[0]
  if (!isInteger(rowid)) throw corrupt(key, 'rowid is not an integer')
  verifyRow(namespace, key, row, 1)
  const { state, meta } = decodeState(key, row, 1)
  return { rowid, state, size: meta.size, valueCrc: meta.valueCrc, writerText: meta.writerText }
}

function leaseCells(state: KeyState) {
  const lease = state.lease
  return [
    lease?.holder ?? null,
    lease?.token ?? null,
    lease?.ttlMs ?? null,
    lease?.expiresAt ?? null,
    state.fence,
  ] as const
}

/**
 * The value columns and checks that store `state`'s value (a deleted key's
 * are `null` and 0), computed from the value in `state`.
 */
export function valueParams(namespace: string, key: string, state: KeyState): ValueParams {
  const live = state.version !== null
  const value = live ? state.value : null
  const size = live ? state.value.byteLength : 0
  const writer = encodeWriter(state.writer)
  const crc = valueCrc(value)
  const cells = [state.version, state.revision, writer, state.updatedAt, size, crc]
  return [
    state.version,
    state.revision,
    writer,
    state.updatedAt,
    size,
    value,
    crc,
    listCheck(namespace, key, state.version, size, state.updatedAt),
    metaCheck(namespace, key, [state.version, writer, state.updatedAt, size, crc]),
    rowCheck(namespace, key, [...cells, ...leaseCells(state)]),
  ]
}

/**
 * The lease columns, fence and row check that store `state`'s lease. The
 * value columns are those of `value`: the row's stored ones when the value is
 * not rewritten, else the `valueParams` written in the same transaction.
 */
export function leaseParams(
  namespace: string,
  key: string,
  state: KeyState,
  value: { readonly size: number; readonly valueCrc: number; readonly writerText: string | null },
): LeaseParams {
  const lease = leaseCells(state)
  const cells = [
    state.version,
    state.revision,
    value.writerText,
    state.updatedAt,
    value.size,
    value.valueCrc,
    ...lease,
  ]
  return [...lease, rowCheck(namespace, key, cells)]
}

/** The insert parameters that store `state` in a new row. */
export function encodeState(namespace: string, key: string, state: KeyState): EntryParams {
  return [...valueParams(namespace, key, state), ...leaseCells(state)]
}

/**
 * Decodes one listing row (`key, version, size, updated_at, list_check`)
 * from the covering index, checking it against its `list_check`.
 */
export function decodeListedRow(namespace: string, row: RawRow): ListEntry {
  const [key, version, size, updatedAt, check] = row
  if (typeof key !== 'string') throw corrupt(String(key), 'key is not text')
  if (check !== listCheck(namespace, key, version, size, updatedAt)) {
    throw corrupt(key, 'the listing index entry does not match its integrity check')
  }
  if (typeof version !== 'string' || version.length === 0) throw corrupt(key, 'version is not text')
  if (!isInteger(size) || size < 0) throw corrupt(key, 'size is not an integer')
  if (typeof updatedAt !== 'number') throw corrupt(key, 'updated_at is not a number')
  return { key, version, size, updatedAt }
}
