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
 * is pretty-printed; valid UTF-8 is text; anything else is hex. A value over
 * {@link PREVIEW_BYTES} shows its first bytes, as text when they decode, and says so.
 */
export function previewValue(size: number, bytes: Uint8Array | null): ValuePreview {
  if (bytes === null) return { kind: 'not-read', size, shownBytes: 0, truncated: true, lines: [] }
  const truncated = bytes.length > PREVIEW_BYTES
  const shown = truncated ? bytes.subarray(0, PREVIEW_BYTES) : bytes
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
      return {
        kind: 'json',
        size,
        shownBytes: shown.length,
        truncated,
        lines: textLines(JSON.stringify(parsed, null, 2)),
      }
    } catch {
      // Not JSON: shown as text.
    }
  }
  return { kind: 'text', size, shownBytes: shown.length, truncated, lines: textLines(text) }
}
