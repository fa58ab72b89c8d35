import { crc32 } from 'node:zlib'
import type { WriterIdentity } from './backend.js'
import { AgentStateError } from './errors.js'
import { quoteForMessage } from './keys.js'

/**
 * The bytes of one key's record in a {@link RecordStore}:
 * `"ASR1"` magic, u32 length of the JSON header, the header, the value, and a
 * CRC-32 of everything before it. A record that fails any check is `CORRUPT`;
 * one with a newer format number is `INCOMPATIBLE_SCHEMA`. Never treated as empty.
 */

const MAGIC = [0x41, 0x53, 0x52, 0x31] // "ASR1"
const FORMAT = 1

/** A lease as stored in a record. */
export interface StoredLease {
  readonly holder: string
  readonly token: number
  readonly ttlMs: number
  readonly expiresAt: number
}

/** The decoded state of one key. */
export interface KeyState {
  /** The value's version, or `null` when the key holds no value (never written, or deleted). */
  readonly version: string | null
  /** Counts value writes and deletes; part of every version, so versions never repeat. */
  readonly revision: number
  readonly writer: WriterIdentity | null
  readonly updatedAt: number
  readonly value: Uint8Array
  readonly lease: StoredLease | null
  /** Highest fencing token ever issued for this key. */
  readonly fence: number
}

interface Header {
  f: number
  v: string | null
  r: number
  w: WriterIdentity | null
  t: number
  l: StoredLease | null
  n: number
}

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** Encodes a key's state as record bytes. */
export function encodeKeyState(state: KeyState): Uint8Array {
  const header: Header = {
    f: FORMAT,
    v: state.version,
    r: state.revision,
    w: state.writer,
    t: state.updatedAt,
    l: state.lease,
    n: state.fence,
  }
  const json = encoder.encode(JSON.stringify(header))
  const out = new Uint8Array(8 + json.byteLength + state.value.byteLength + 4)
  const view = new DataView(out.buffer)
  out.set(MAGIC, 0)
  view.setUint32(4, json.byteLength)
  out.set(json, 8)
  out.set(state.value, 8 + json.byteLength)
  view.setUint32(out.byteLength - 4, crc32(out.subarray(0, out.byteLength - 4)))
  return out
}

function corrupt(key: string, problem: string): AgentStateError {
  return new AgentStateError(
    'CORRUPT',
    `Record of key ${quoteForMessage(key)} is corrupt: ${problem}`,
    {
      context: { key, problem },
    },
  )
}

/** Decodes record bytes; throws `CORRUPT` or `INCOMPATIBLE_SCHEMA`. */
export function decodeKeyState(key: string, data: Uint8Array): KeyState {
  if (data.byteLength < 12 || MAGIC.some((byte, i) => data[i] !== byte)) {
    throw corrupt(key, 'bad magic or too short')
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength)
  if (view.getUint32(data.byteLength - 4) !== crc32(data.subarray(0, data.byteLength - 4))) {
    throw corrupt(key, 'checksum mismatch')
  }
  const length = view.getUint32(4)
  if (8 + length > data.byteLength - 4) throw corrupt(key, 'header length out of range')
  let header: Header
  try {
    header = JSON.parse(decoder.decode(data.subarray(8, 8 + length))) as Header
  } catch (cause) {
    throw corrupt(key, `unreadable header (${String(cause)})`)
  }
  if (typeof header !== 'object' || header === null || typeof header.f !== 'number') {
    throw corrupt(key, 'header is not an object')
  }
  if (header.f !== FORMAT) {
    throw new AgentStateError(
      'INCOMPATIBLE_SCHEMA',
      `Record of key ${quoteForMessage(key)} has format ${header.f}; this version reads format ${FORMAT}`,
      { context: { key, format: header.f } },
    )
  }
  if (
    !(header.v === null || typeof header.v === 'string') ||
    !Number.isSafeInteger(header.r) ||
    !Number.isSafeInteger(header.n) ||
    typeof header.t !== 'number'
  ) {
    throw corrupt(key, 'header fields of the wrong type')
  }
  return {
    version: header.v,
    revision: header.r,
    writer: header.w,
    updatedAt: header.t,
    // A copy even when a store hands over a Buffer (whose `slice` is a view): the value goes to
    // the caller of `get`, who may mutate it.
    value: Uint8Array.prototype.slice.call(data, 8 + length, data.byteLength - 4),
    lease: header.l,
    fence: header.n,
  }
}
