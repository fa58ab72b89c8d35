import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { daemonError } from '../shared/errors.js'

const encoder = new TextEncoder()

/**
 * Checks that a trigger event is plain JSON of at most `maxBytes` (as
 * `JSON.stringify` bytes) and returns it. The error context names the
 * daemon and sizes only, never the event's contents.
 *
 * @throws `INVALID_EVENT`, `EVENT_TOO_LARGE`.
 */
export function encodeEvent(event: unknown, maxBytes: number, daemonId: string): JsonValue {
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
  const size = encoder.encode(json).byteLength
  if (size > maxBytes) {
    throw daemonError('EVENT_TOO_LARGE', `A trigger event of ${size} bytes exceeds ${maxBytes}`, {
      daemonId,
      size,
      maxEventBytes: maxBytes,
    })
  }
  return event as JsonValue
}
