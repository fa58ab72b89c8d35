import { AgentStateError } from '@agent-state/core'

/**
 * Every record the saver stores: `AGLG` magic, a format byte, a 4-byte
 * big-endian header length, the JSON header, then the payload bytes (what the
 * serializer produced, kept verbatim). A record that does not parse is
 * `CORRUPT`, an unknown format byte `INCOMPATIBLE_SCHEMA`: never treated as missing.
 * Format 1: every record of versions up to 0.1 (and pending writes, channel
 * values); format 2: the one-record checkpoint (`CheckpointHeader`, records.ts),
 * which a saver that knows only format 1 refuses as `INCOMPATIBLE_SCHEMA`.
 */
export interface DecodedRecord<H> {
  readonly header: H
  readonly payload: Uint8Array
}

const MAGIC = [0x41, 0x47, 0x4c, 0x47] as const
/** The record formats this version reads. */
const FORMATS: ReadonlySet<number> = new Set([1, 2])
const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/** Encodes a header and a payload into one record. */
export function encodeRecord(
  header: object,
  payload: Uint8Array = new Uint8Array(0),
  format: 1 | 2 = 1,
): Uint8Array {
  const head = encoder.encode(JSON.stringify(header))
  const out = new Uint8Array(9 + head.length + payload.length)
  out.set(MAGIC, 0)
  out[4] = format
  new DataView(out.buffer).setUint32(5, head.length)
  out.set(head, 9)
  out.set(payload, 9 + head.length)
  return out
}

/** Decodes a record and checks its header with `isHeader`. */
export function decodeRecord<H>(
  bytes: Uint8Array,
  key: string,
  isHeader: (value: unknown) => value is H,
): DecodedRecord<H> {
  const corrupt = (why: string, cause?: unknown): AgentStateError =>
    new AgentStateError('CORRUPT', `A LangGraph record is damaged: ${why}`, {
      context: { key },
      cause,
    })
  if (bytes.length < 9 || MAGIC.some((byte, i) => bytes[i] !== byte)) throw corrupt('bad magic')
  if (!FORMATS.has(bytes[4] as number)) {
    throw new AgentStateError('INCOMPATIBLE_SCHEMA', 'A LangGraph record has an unknown format', {
      context: { key, format: bytes[4] },
    })
  }
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(5)
  if (9 + length > bytes.length) throw corrupt('truncated header')
  let header: unknown
  try {
    header = JSON.parse(decoder.decode(bytes.subarray(9, 9 + length)))
  } catch (error) {
    throw corrupt('header is not JSON', error)
  }
  if (!isHeader(header)) throw corrupt('unexpected header')
  return { header, payload: bytes.subarray(9 + length) }
}
