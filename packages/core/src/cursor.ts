import { AgentStateError } from './errors.js'

/**
 * Listing cursors are opaque to callers. Inside they say where the previous
 * page stopped: after a key, or after a whole delimiter group (every key that
 * starts with `after`).
 */
export interface CursorPosition {
  /** The last key or prefix group returned. */
  readonly after: string
  /** `true` when `after` is a delimiter group whose keys must all be skipped. */
  readonly group: boolean
}

const CURSOR_VERSION = 1

/** Encodes a cursor position as an opaque base64url string. */
export function encodeCursor(position: CursorPosition): string {
  const json = JSON.stringify({ v: CURSOR_VERSION, a: position.after, g: position.group ? 1 : 0 })
  return Buffer.from(json, 'utf8').toString('base64url')
}

/** Decodes a cursor from {@link encodeCursor}, or throws `INVALID_ARGUMENT`. */
export function decodeCursor(cursor: string): CursorPosition {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'))
    if (
      typeof parsed === 'object' &&
      parsed !== null &&
      (parsed as { v?: unknown }).v === CURSOR_VERSION &&
      typeof (parsed as { a?: unknown }).a === 'string' &&
      ((parsed as { g?: unknown }).g === 0 || (parsed as { g?: unknown }).g === 1)
    ) {
      const { a, g } = parsed as { a: string; g: 0 | 1 }
      return { after: a, group: g === 1 }
    }
  } catch {
    // fall through to the error below
  }
  throw new AgentStateError('INVALID_ARGUMENT', 'Invalid list cursor', { context: { cursor } })
}
