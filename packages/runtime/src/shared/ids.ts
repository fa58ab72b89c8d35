import { randomBytes } from 'node:crypto'
import { quoteForMessage } from '@agent-state/core'
import { runtimeError } from './errors.js'

/**
 * Session and worker ids become one key segment. The pattern keeps them to
 * characters that mean the same on every backend (no `/`, no `.`/`..`, no
 * leading dot, no reserved `.as~` segment, nothing a filesystem or URL would
 * reinterpret), so an id can neither escape its prefix nor collide with
 * another id or with the runtime's own records.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/

let lastMs = 0
let sequence = 0

/**
 * A UUIDv7 (RFC 9562): 48-bit millisecond timestamp, version 7, 12-bit
 * sequence counter (monotonic within one millisecond in this process),
 * variant bits, 62 random bits. Ids from one process sort by creation time.
 */
export function uuidv7(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now
    sequence = randomBytes(2).readUInt16BE(0) & 0x7ff
  } else {
    sequence++
    if (sequence > 0xfff) {
      // Counter overflow: borrow the next millisecond so ids stay ordered.
      lastMs++
      sequence = 0
    }
  }
  const bytes = randomBytes(16)
  const ms = lastMs
  bytes[0] = Math.floor(ms / 2 ** 40) & 0xff
  bytes[1] = Math.floor(ms / 2 ** 32) & 0xff
  bytes[2] = (ms >>> 24) & 0xff
  bytes[3] = (ms >>> 16) & 0xff
  bytes[4] = (ms >>> 8) & 0xff
  bytes[5] = ms & 0xff
  bytes[6] = 0x70 | ((sequence >>> 8) & 0x0f)
  bytes[7] = sequence & 0xff
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f)
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** Whether `id` is a valid session or worker id (see {@link ID_PATTERN}). */
export function isValidId(id: unknown): id is string {
  return typeof id === 'string' && ID_PATTERN.test(id) && !id.startsWith('.as~')
}

/** Throws `INVALID_SESSION_ID` unless `id` matches {@link ID_PATTERN}. */
export function assertSessionId(id: unknown): asserts id is string {
  if (!isValidId(id)) {
    throw runtimeError(
      'INVALID_SESSION_ID',
      `Invalid session id ${describe(id)}: use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit`,
      { sessionId: typeof id === 'string' ? id.slice(0, 200) : typeof id },
    )
  }
}

/** Throws `INVALID_WORKER_ID` unless `id` matches {@link ID_PATTERN}. */
export function assertWorkerId(id: unknown): asserts id is string {
  if (!isValidId(id)) {
    throw runtimeError(
      'INVALID_WORKER_ID',
      `Invalid worker id ${describe(id)}: use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit`,
      { workerId: typeof id === 'string' ? id.slice(0, 200) : typeof id },
    )
  }
}

function describe(id: unknown): string {
  return typeof id === 'string' ? quoteForMessage(id.slice(0, 200)) : typeof id
}
