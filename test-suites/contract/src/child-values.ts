import { createHash } from 'node:crypto'

/**
 * Self-checking values of the crash tier: a SHA-256 of the rest, then a JSON
 * header line, then filler. A torn or partial value fails the check.
 */

const HASH_BYTES = 32

/** Builds a value for `key` and `counter` with `filler` bytes of padding. */
export function makeCheckedValue(key: string, counter: number, filler: number): Uint8Array {
  const header = Buffer.from(`${JSON.stringify({ key, counter, filler })}\n`)
  const body = Buffer.alloc(header.byteLength + filler)
  header.copy(body)
  for (let i = 0; i < filler; i++) body[header.byteLength + i] = (counter * 31 + i * 7) & 0xff
  const hash = createHash('sha256').update(body).digest()
  return new Uint8Array(Buffer.concat([hash, body]))
}

/** Verifies a value from {@link makeCheckedValue}; returns its header or a problem string. */
export function readCheckedValue(data: Uint8Array): { key: string; counter: number } | string {
  if (data.byteLength < HASH_BYTES + 2) return `value too short (${data.byteLength} bytes)`
  const buffer = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
  const body = buffer.subarray(HASH_BYTES)
  const hash = createHash('sha256').update(body).digest()
  if (!hash.equals(buffer.subarray(0, HASH_BYTES)))
    return 'content hash mismatch (partial or corrupt value)'
  const newline = body.indexOf(0x0a)
  try {
    const header = JSON.parse(body.subarray(0, newline).toString('utf8')) as {
      key: string
      counter: number
      filler: number
    }
    if (body.byteLength !== newline + 1 + header.filler) return 'length does not match the header'
    return { key: header.key, counter: header.counter }
  } catch {
    return 'unreadable header'
  }
}
