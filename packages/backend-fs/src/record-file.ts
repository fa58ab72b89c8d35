import { crc32 } from 'node:zlib'
import { AgentStateError, MAX_KEY_BYTES } from '@agent-state/core'

/**
 * The bytes of one record file: a small envelope around core's record bytes.
 *
 * `"ASF"` + format digit `"1"`, u16 key length, u8 version length, the key
 * (UTF-8), the record version (ASCII), a CRC-32 of all of that, then the
 * record bytes from core's codec (which carry their own CRC). The key is
 * inside so hashed file names can be listed and checked; the version is the
 * store's, new for every write.
 */

const MAGIC = [0x41, 0x53, 0x46] // "ASF"
const FORMAT = 0x31 // "1"
const FIXED = 4 + 2 + 1

/** A decoded record file. */
export interface RecordFile {
  readonly key: string
  readonly version: string
  readonly data: Uint8Array
}

/** Encodes a record file. */
export function encodeRecordFile(key: string, version: string, data: Uint8Array): Buffer {
  const keyBytes = Buffer.from(key, 'utf8')
  const versionBytes = Buffer.from(version, 'latin1')
  const headerLength = FIXED + keyBytes.byteLength + versionBytes.byteLength
  const out = Buffer.allocUnsafe(headerLength + 4 + data.byteLength)
  out[0] = MAGIC[0] as number
  out[1] = MAGIC[1] as number
  out[2] = MAGIC[2] as number
  out[3] = FORMAT
  out.writeUInt16BE(keyBytes.byteLength, 4)
  out.writeUInt8(versionBytes.byteLength, 6)
  keyBytes.copy(out, FIXED)
  versionBytes.copy(out, FIXED + keyBytes.byteLength)
  out.writeUInt32BE(crc32(out.subarray(0, headerLength)), headerLength)
  out.set(data, headerLength + 4)
  return out
}

function corrupt(file: string, problem: string, key?: string): AgentStateError {
  return new AgentStateError('CORRUPT', `Record file ${file} is corrupt: ${problem}`, {
    context: key === undefined ? { file, problem } : { key, file, problem },
  })
}

/** The envelope of a record file: its key, its version, and where core's record bytes start. */
export interface RecordHeader {
  readonly key: string
  readonly version: string
  /** Offset of core's record bytes. */
  readonly dataStart: number
}

/** Longest envelope a valid file can have: keys are at most `MAX_KEY_BYTES`, versions 255. */
export const MAX_HEADER_BYTES = FIXED + MAX_KEY_BYTES + 255 + 4

/**
 * Decodes and checks a record file's envelope from its first bytes (at least
 * {@link MAX_HEADER_BYTES}, or the whole file); throws `CORRUPT` (bad magic,
 * checksum, lengths, or a key other than `expectedKey`) or
 * `INCOMPATIBLE_SCHEMA` (a newer format). The bytes after it are not checked.
 */
export function decodeRecordHeader(
  bytes: Buffer,
  file: string,
  expectedKey?: string,
): RecordHeader {
  if (bytes.byteLength < FIXED + 4 || MAGIC.some((byte, i) => bytes[i] !== byte)) {
    throw corrupt(file, 'bad magic or too short', expectedKey)
  }
  if (bytes[3] !== FORMAT) {
    const format = String.fromCharCode(bytes[3] as number)
    throw new AgentStateError(
      'INCOMPATIBLE_SCHEMA',
      `Record file ${file} has format ${JSON.stringify(format)}; this version reads format "1"`,
      { context: { file, format } },
    )
  }
  const keyLength = bytes.readUInt16BE(4)
  const versionLength = bytes.readUInt8(6)
  const headerLength = FIXED + keyLength + versionLength
  if (headerLength + 4 > bytes.byteLength) throw corrupt(file, 'header out of range', expectedKey)
  if (bytes.readUInt32BE(headerLength) !== crc32(bytes.subarray(0, headerLength))) {
    throw corrupt(file, 'header checksum mismatch', expectedKey)
  }
  const key = bytes.toString('utf8', FIXED, FIXED + keyLength)
  if (expectedKey !== undefined && key !== expectedKey) {
    throw corrupt(file, 'it holds another key', expectedKey)
  }
  const version = bytes.toString('latin1', FIXED + keyLength, headerLength)
  return { key, version, dataStart: headerLength + 4 }
}

/**
 * Decodes a whole record file; throws like {@link decodeRecordHeader}. Core's
 * record bytes carry their own checksum, checked when core decodes them.
 */
export function decodeRecordFile(bytes: Buffer, file: string, expectedKey?: string): RecordFile {
  const { key, version, dataStart } = decodeRecordHeader(bytes, file, expectedKey)
  return { key, version, data: bytes.subarray(dataStart) }
}
