import { escapeForDisplay } from '@agent-state/core'

/** Bytes of a value the preview shows at most. */
export const PREVIEW_BYTES = 16 * 1024

/** Values larger than this are not read at all: the preview then shows only their size. */
export const PREVIEW_READ_LIMIT_BYTES = 4 * 1024 * 1024

/** How a value is shown: UTF-8 text, pretty-printed JSON, or bytes as hex. */
export type PreviewKind = 'json' | 'text' | 'hex' | 'not-read'

/** A value preview, every line already escaped for display (see `escapeForDisplay`). */
export interface ValuePreview {
  readonly kind: PreviewKind
  /** The value's full size in bytes. */
  readonly size: number
  /** How many of its bytes the lines show. */
  readonly shownBytes: number
  readonly truncated: boolean
  readonly lines: readonly string[]
}

const HEX_WIDTH = 16

/**
 * The deepest JSON a preview pretty-prints: each level indents every line below it, so a
 * 16 KiB value of nested arrays would print as hundreds of megabytes; deeper JSON is shown as
 * the text it is.
 */
export const PRETTY_MAX_DEPTH = 32

/** Whether `value` nests deeper than `limit` arrays and objects. */
function deeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  if (limit === 0) return true
  return Object.values(value).some((child) => deeperThan(child, limit - 1))
}

function hexLines(bytes: Uint8Array): string[] {
  const lines: string[] = []
  for (let at = 0; at < bytes.length; at += HEX_WIDTH) {
    const row = bytes.subarray(at, at + HEX_WIDTH)
    const hex = [...row].map((b) => b.toString(16).padStart(2, '0')).join(' ')
    const ascii = [...row].map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.'))
    lines.push(
      `${at.toString(16).padStart(8, '0')}  ${hex.padEnd(HEX_WIDTH * 3 - 1)}  |${ascii.join('')}|`,
    )
  }
  return lines
}

/** Lines of text, each escaped on its own (so the line breaks stay line breaks, nothing else does). */
function textLines(text: string): string[] {
  return text.split('\n').map((line) => escapeForDisplay(line))
}

/**
 * The preview of a value of `size` bytes whose first bytes are `bytes` (`null`: not read,
 * because it is over {@link PREVIEW_READ_LIMIT_BYTES}). A whole value that is valid UTF-8 JSON
 * is pretty-printed (unless it nests deeper than `maxDepth`, {@link PRETTY_MAX_DEPTH} unless
 * told); valid UTF-8 is text; anything else is hex. A value over `limit` bytes
 * ({@link PREVIEW_BYTES} unless told) shows its first bytes, as text when they decode, and
 * says so.
 */
export function previewValue(
  size: number,
  bytes: Uint8Array | null,
  limit = PREVIEW_BYTES,
  maxDepth = PRETTY_MAX_DEPTH,
): ValuePreview {
  if (bytes === null) return { kind: 'not-read', size, shownBytes: 0, truncated: true, lines: [] }
  const truncated = bytes.length > limit
  const shown = truncated ? bytes.subarray(0, limit) : bytes
  let text: string | null
  try {
    // A cut through a multi-byte character at the end is not an error: `stream` keeps it back.
    text = new TextDecoder('utf-8', { fatal: true }).decode(shown, { stream: truncated })
  } catch {
    text = null
  }
  if (text === null) {
    return { kind: 'hex', size, shownBytes: shown.length, truncated, lines: hexLines(shown) }
  }
  if (!truncated) {
    try {
      const parsed: unknown = JSON.parse(text)
      if (deeperThan(parsed, maxDepth)) throw new Error('too deep to pretty-print')
      return {
        kind: 'json',
        size,
        shownBytes: shown.length,
        truncated,
        lines: textLines(JSON.stringify(parsed, null, 2)),
      }
    } catch {
      // Not JSON, or too deep to pretty-print: shown as text.
    }
  }
  return { kind: 'text', size, shownBytes: shown.length, truncated, lines: textLines(text) }
}
