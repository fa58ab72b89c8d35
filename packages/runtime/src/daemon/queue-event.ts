import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { daemonError } from '../shared/errors.js'
import { randomHex } from './random-hex.js'

/** A checked trigger event: the value, its JSON (as stored) and that JSON's size in bytes. */
export interface EncodedEvent {
  readonly value: JsonValue
  readonly json: string
  readonly bytes: number
}

/**
 * Checks that a trigger event is plain JSON of at most `maxBytes` (as
 * `JSON.stringify` bytes) and returns it with its JSON, serialised once here
 * for the size check, the batch limits and the native path's record. The
 * error context names the daemon and sizes only, never the event's contents.
 *
 * @throws `INVALID_EVENT`, `EVENT_TOO_LARGE`.
 */
export function encodeEvent(event: unknown, maxBytes: number, daemonId: string): EncodedEvent {
  let json: string | undefined
  try {
    // JSON.stringify throws on cycles and BigInt, which the schema alone lets through.
    if (event !== undefined && jsonValueSchema.safeParse(event).success)
      json = JSON.stringify(event)
  } catch {
    json = undefined
  }
  if (json === undefined) {
    throw daemonError('INVALID_EVENT', 'A trigger event must be plain JSON', {
      daemonId,
      type: event === null ? 'null' : typeof event,
    })
  }
  // JSON.stringify escapes lone surrogates, so this counts the UTF-8 bytes TextEncoder would write.
  const size = Buffer.byteLength(json, 'utf8')
  if (size > maxBytes) {
    throw daemonError('EVENT_TOO_LARGE', `A trigger event of ${size} bytes exceeds ${maxBytes}`, {
      daemonId,
      size,
      maxEventBytes: maxBytes,
    })
  }
  return { value: event as JsonValue, json, bytes: size }
}

/** A new event id: 12 random bytes in hex. */
export function newEventId(): string {
  return randomHex(12)
}
