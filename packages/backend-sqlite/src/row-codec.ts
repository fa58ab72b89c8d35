import {
  AgentStateError,
  type KeyState,
  type StoredLease,
  type WriterIdentity,
} from '@agent-state/core'

/**
 * One row of the entries table, as better-sqlite3 returns it. Columns are
 * typed `unknown` on purpose: a row is checked before it is trusted, and one
 * that does not decode is `CORRUPT`, never treated as empty.
 */
export interface EntryRow {
  readonly version: unknown
  readonly revision: unknown
  readonly writer: unknown
  readonly updated_at: unknown
  readonly size: unknown
  readonly value?: unknown
  readonly lease_holder: unknown
  readonly lease_token: unknown
  readonly lease_ttl_ms: unknown
  readonly lease_expires_at: unknown
  readonly fence: unknown
}

/** The bound parameters of an upsert, in the order of the INSERT's columns after namespace and key. */
export type EntryParams = [
  version: string | null,
  revision: number,
  writer: string | null,
  updatedAt: number,
  size: number,
  value: Uint8Array | null,
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
    `Row of key ${JSON.stringify(key)} is corrupt: ${problem}`,
    cause === undefined ? { context: { key, problem } } : { context: { key, problem }, cause },
  )
}

const isInteger = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value)

function decodeWriter(key: string, raw: unknown): WriterIdentity | null {
  if (raw === null) return null
  if (typeof raw !== 'string') throw corrupt(key, 'writer is not text')
  let parsed: unknown
  try {
    parsed = JSON.parse(raw)
  } catch (cause) {
    throw corrupt(key, 'writer is not JSON', cause)
  }
  if (typeof parsed !== 'object' || parsed === null) throw corrupt(key, 'writer is not an object')
  const fields = parsed as Record<string, unknown>
  if (typeof fields.writerId !== 'string') throw corrupt(key, 'writer has no writerId')
  for (const field of ['stageId', 'sessionId', 'workerId']) {
    if (fields[field] !== undefined && typeof fields[field] !== 'string') {
      throw corrupt(key, `writer.${field} is not text`)
    }
  }
  return parsed as WriterIdentity
}

function decodeLease(key: string, row: EntryRow): StoredLease | null {
  const { lease_holder: holder, lease_token: token, lease_ttl_ms: ttlMs } = row
  const expiresAt = row.lease_expires_at
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
  return { holder, token, ttlMs, expiresAt }
}

/**
 * Decodes a row into the key's state. Without a `value` column (a `head`
 * read), the state carries an empty value and the stored size is trusted.
 */
export function decodeRow(key: string, row: EntryRow): { state: KeyState; size: number } {
  const { version, revision, updated_at: updatedAt, size, fence } = row
  if (!(version === null || (typeof version === 'string' && version.length > 0))) {
    throw corrupt(key, 'version is not text')
  }
  if (!isInteger(revision) || revision < 0) throw corrupt(key, 'revision is not an integer')
  if (!isInteger(fence) || fence < 0) throw corrupt(key, 'fence is not an integer')
  if (typeof updatedAt !== 'number') throw corrupt(key, 'updated_at is not a number')
  if (!isInteger(size) || size < 0) throw corrupt(key, 'size is not an integer')
  const lease = decodeLease(key, row)
  if (lease !== null && lease.token > fence) throw corrupt(key, 'lease token above the fence')
  let value: Uint8Array = EMPTY
  if ('value' in row) {
    if (version === null) {
      if (row.value !== null) throw corrupt(key, 'a deleted key holds a value')
    } else {
      if (!(row.value instanceof Uint8Array)) throw corrupt(key, 'value is not a blob')
      if (row.value.byteLength !== size) throw corrupt(key, 'value length differs from its size')
      // A plain Uint8Array view of better-sqlite3's Buffer: callers compare it with Uint8Arrays.
      value = new Uint8Array(row.value.buffer, row.value.byteOffset, row.value.byteLength)
    }
  }
  return {
    state: {
      version,
      revision,
      writer: decodeWriter(key, row.writer),
      updatedAt,
      value,
      lease,
      fence,
    },
    size,
  }
}

/** The upsert parameters that store `state`. */
export function encodeState(state: KeyState): EntryParams {
  const lease = state.lease
  return [
    state.version,
    state.revision,
    state.writer === null ? null : JSON.stringify(state.writer),
    state.updatedAt,
    state.version === null ? 0 : state.value.byteLength,
    state.version === null ? null : state.value,
    lease?.holder ?? null,
    lease?.token ?? null,
    lease?.ttlMs ?? null,
    lease?.expiresAt ?? null,
    state.fence,
  ]
}

/** Checks one listing row from the covering index; a malformed one is `CORRUPT`. */
export function checkListed(row: {
  readonly key: unknown
  readonly version: unknown
  readonly size: unknown
  readonly updated_at: unknown
}): { key: string; version: string; size: number; updatedAt: number } {
  const key = typeof row.key === 'string' ? row.key : String(row.key)
  if (typeof row.key !== 'string') throw corrupt(key, 'key is not text')
  if (typeof row.version !== 'string' || row.version.length === 0) {
    throw corrupt(key, 'version is not text')
  }
  if (!isInteger(row.size) || row.size < 0) throw corrupt(key, 'size is not an integer')
  if (typeof row.updated_at !== 'number') throw corrupt(key, 'updated_at is not a number')
  return { key: row.key, version: row.version, size: row.size, updatedAt: row.updated_at }
}
