import { crc32 } from 'node:zlib'
import {
  ABSENT_STATE,
  type KeyState,
  type ListEntry,
  type StoredLease,
  type WriterIdentity,
} from '@agent-state/core'
import { corruptRow } from './errors.js'

/**
 * Decodes rows into core's `KeyState` and encodes states into statement
 * parameters. Every cell is checked: a value whose bytes do not match its
 * CRC-32 or size, a row whose columns contradict each other, a writer that is
 * not a writer identity: `CORRUPT`, never a wrong read.
 */

/** A row of `Statements.read` (pg returns `bigint` as text). */
export interface StateRow {
  readonly now_ms: string
  readonly row_version: string | null
  readonly version: string | null
  readonly revision: string | null
  readonly writer: string | null
  readonly updated_at: string | null
  readonly size: string | null
  readonly value_crc: string | null
  readonly lease_holder: string | null
  readonly lease_token: string | null
  readonly lease_ttl_ms: string | null
  readonly lease_expires_at: string | null
  readonly fence: string | null
  readonly value?: Buffer | null
}

/**
 * A row of a one-statement write (`Statements.put`, `Statements.delete`): the
 * row as the statement's snapshot saw it, and what the statement wrote.
 */
export interface WrittenRow extends StateRow {
  /** `put`: the version written, null when nothing was. */
  readonly written_version?: string | null
  /** `put`: `updated_at` of the value written (database clock). */
  readonly written_updated_at?: string | null
  /** `delete`: 1 when the value was removed, else 0. */
  readonly written?: string
  /** Fenced `put`: true when the fence is not the fence key's current, unexpired lease. */
  readonly fence_lost?: boolean | null
  /** Fenced `put`: the fence key's lease token as the locked read saw it (null: none). */
  readonly fence_token?: string | null
}

/**
 * The fence key's lease token of a fenced put's answer (`Statements.fencedPut`),
 * null when it has none; a cell that is no integer is `CORRUPT` (of the fence key).
 */
export function decodeFenceToken(fenceKey: string, row: WrittenRow): number | null {
  const cell = row.fence_token ?? null
  return cell === null ? null : integer(fenceKey, cell, 'lease_token')
}

/** A key's state as read: the database time of the read, and the row version to write against. */
export interface LoadedState {
  /** Milliseconds since the epoch on the database clock, when the row was read. */
  readonly now: number
  /** `null` when the key has no row. */
  readonly rowVersion: string | null
  /** The state; its `value` is empty unless read with the value. */
  readonly state: KeyState
  /** The stored value's size (also when the value was not read). */
  readonly size: number
}

/** The CRC-32 of a value, as stored in `value_crc`. */
export function valueCrc(value: Uint8Array): number {
  return crc32(value)
}

function integer(key: string, cell: string | null, column: string): number {
  const value = Number(cell)
  if (cell === null || !Number.isSafeInteger(value)) {
    throw corruptRow(key, `column ${column} is not an integer`)
  }
  return value
}

function decodeWriter(key: string, text: string | null): WriterIdentity | null {
  if (text === null) return null
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw corruptRow(key, 'the writer is not JSON')
  }
  const writer = parsed as Record<string, unknown> | null
  const fields = ['writerId', 'stageId', 'sessionId', 'workerId']
  if (
    writer === null ||
    typeof writer !== 'object' ||
    typeof writer.writerId !== 'string' ||
    Object.entries(writer).some(([name, v]) => !fields.includes(name) || typeof v !== 'string')
  ) {
    throw corruptRow(key, 'the writer is not a writer identity')
  }
  return writer as unknown as WriterIdentity
}

/** Decodes a `read` row; checks the value against its size and CRC-32 when it was read. */
export function decodeState(key: string, row: StateRow): LoadedState {
  const now = Number(row.now_ms)
  if (row.row_version === null) return { now, rowVersion: null, state: ABSENT_STATE, size: 0 }
  const live = row.version !== null
  const size = integer(key, row.size, 'size')
  let value: Uint8Array = ABSENT_STATE.value
  if (row.value !== undefined) {
    if (live !== (row.value !== null)) throw corruptRow(key, 'value and version disagree')
    if (row.value !== null) {
      if (row.value.byteLength !== size) throw corruptRow(key, 'the value is not its stored size')
      if (valueCrc(row.value) !== integer(key, row.value_crc, 'value_crc')) {
        throw corruptRow(key, 'the value does not match its checksum')
      }
      value = new Uint8Array(row.value.buffer, row.value.byteOffset, row.value.byteLength)
    }
  }
  let lease: StoredLease | null = null
  if (row.lease_holder !== null) {
    lease = {
      holder: row.lease_holder,
      token: integer(key, row.lease_token, 'lease_token'),
      ttlMs: integer(key, row.lease_ttl_ms, 'lease_ttl_ms'),
      expiresAt: integer(key, row.lease_expires_at, 'lease_expires_at'),
    }
  }
  const fence = integer(key, row.fence, 'fence')
  if (lease !== null && lease.token > fence)
    throw corruptRow(key, 'the lease token exceeds the fence')
  return {
    now,
    rowVersion: row.row_version,
    size,
    state: {
      version: row.version,
      revision: integer(key, row.revision, 'revision'),
      writer: live ? decodeWriter(key, row.writer) : null,
      updatedAt: integer(key, row.updated_at, 'updated_at'),
      value,
      lease,
      fence,
    },
  }
}

/** A listing row (`Statements.scan`) as a listing entry. */
export function decodeListed(row: {
  key: string
  version: string
  size: string
  updated_at: string
}): ListEntry {
  return {
    key: row.key,
    version: row.version,
    size: integer(row.key, row.size, 'size'),
    updatedAt: integer(row.key, row.updated_at, 'updated_at'),
  }
}

/** Parameters `$4…$10` of `writeValue`: the value columns of `state`. */
export function valueParams(state: KeyState): unknown[] {
  const live = state.version !== null
  return [
    state.version,
    state.revision,
    live && state.writer !== null ? JSON.stringify(state.writer) : null,
    state.updatedAt,
    live ? state.value.byteLength : 0,
    live ? Buffer.from(state.value.buffer, state.value.byteOffset, state.value.byteLength) : null,
    live ? valueCrc(state.value) : null,
  ]
}

/** Parameters `$4…$8` of `writeLease`: the lease columns of `state`. */
export function leaseParams(state: KeyState): unknown[] {
  const lease = state.lease
  return [
    lease?.holder ?? null,
    lease?.token ?? null,
    lease?.ttlMs ?? null,
    lease?.expiresAt ?? null,
    state.fence,
  ]
}
