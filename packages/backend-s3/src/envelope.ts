import { randomBytes } from 'node:crypto'
import { AgentStateError, quoteForMessage } from '@agent-state/core'

/**
 * The body of every object this backend writes:
 * `"AS3\x01"`, a count `n` (1 to {@link HISTORY_DEPTH}), `n` write ids of
 * 16 bytes each (this write's first, then its predecessors' newest first),
 * the key (u16 length in bytes, then UTF-8; long keys are stored under a
 * shortened object name, see `key-layout.ts`), then the record bytes of
 * core's codec.
 *
 * The write id makes every body unique, so the object's ETag (an MD5 of the
 * body on S3, RGW and MinIO) never repeats for a key: it is the record
 * version. The predecessor ids let a writer whose request ended ambiguously
 * (5xx, timeout) tell whether its write landed, even after a few later writes
 * replaced it.
 */

const MAGIC = [0x41, 0x53, 0x33, 0x01] // "AS3\x01"
const ID_BYTES = 16

/** How many write ids (this one and its predecessors) each body carries. */
export const HISTORY_DEPTH = 8

/** A decoded body. */
export interface Envelope {
  /** The key the object belongs to. */
  readonly key: string
  /** Write ids, this write's first, then its predecessors' (newest first). */
  readonly history: readonly string[]
  /** The record bytes. */
  readonly data: Uint8Array
}

/** A fresh random write id. */
export function newWriteId(): string {
  return randomBytes(ID_BYTES).toString('hex')
}

/** Encodes a body: `writeId` first, then up to `HISTORY_DEPTH - 1` predecessors. */
export function encodeEnvelope(
  key: string,
  writeId: string,
  predecessors: readonly string[],
  data: Uint8Array,
): Buffer {
  const ids = [writeId, ...predecessors].slice(0, HISTORY_DEPTH)
  const keyBytes = Buffer.from(key, 'utf8')
  const keyAt = 5 + ids.length * ID_BYTES
  const out = Buffer.allocUnsafe(keyAt + 2 + keyBytes.byteLength + data.byteLength)
  out.set(MAGIC, 0)
  out[4] = ids.length
  ids.forEach((id, index) => {
    out.write(id, 5 + index * ID_BYTES, ID_BYTES, 'hex')
  })
  out.writeUInt16BE(keyBytes.byteLength, keyAt)
  out.set(keyBytes, keyAt + 2)
  out.set(data, keyAt + 2 + keyBytes.byteLength)
  return out
}

const keyDecoder = new TextDecoder('utf-8', { fatal: true })

/**
 * Decodes a body; throws `CORRUPT` for an object this backend did not write
 * or one that belongs to another key than `expectedKey` (when given).
 */
export function decodeEnvelope(
  objectName: string,
  body: Uint8Array,
  expectedKey?: string,
): Envelope {
  const corrupt = (problem: string): AgentStateError =>
    new AgentStateError(
      'CORRUPT',
      `Object ${quoteForMessage(objectName)} is not a valid agent-state record: ${problem}`,
      { context: { key: expectedKey ?? objectName, problem } },
    )
  const count = body[4] ?? 0
  const keyAt = 5 + count * ID_BYTES
  if (
    body.byteLength < 5 ||
    MAGIC.some((byte, index) => body[index] !== byte) ||
    count < 1 ||
    count > HISTORY_DEPTH ||
    body.byteLength < keyAt + 2
  ) {
    throw corrupt('bad envelope')
  }
  const buffer = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  const history: string[] = []
  for (let index = 0; index < count; index++) {
    const start = 5 + index * ID_BYTES
    history.push(buffer.toString('hex', start, start + ID_BYTES))
  }
  const keyLength = buffer.readUInt16BE(keyAt)
  if (body.byteLength < keyAt + 2 + keyLength) throw corrupt('key out of range')
  let key: string
  try {
    key = keyDecoder.decode(body.subarray(keyAt + 2, keyAt + 2 + keyLength))
  } catch {
    throw corrupt('key is not UTF-8')
  }
  if (expectedKey !== undefined && key !== expectedKey) throw corrupt('it belongs to another key')
  return { key, history, data: body.subarray(keyAt + 2 + keyLength) }
}
