import { escapeForDisplay } from '@agent-state/core'
import { CliError, EXIT } from './exit-codes.js'

/** How a listing is printed: aligned text for people, one JSON document, or one JSON object per line. */
export type OutputFormat = 'text' | 'json' | 'jsonl'

/** The output flags every listing command takes. */
export interface FormatFlags {
  readonly json?: boolean
  readonly jsonl?: boolean
}

/** The format the flags ask for; both at once is a usage error. */
export function formatOf(flags: FormatFlags): OutputFormat {
  if (flags.json === true && flags.jsonl === true) {
    throw new CliError('--json and --jsonl cannot be combined', EXIT.USAGE)
  }
  return flags.json === true ? 'json' : flags.jsonl === true ? 'jsonl' : 'text'
}

/** Writes to stdout, waiting for the pipe to drain so large listings keep memory flat. */
export async function out(text: string | Uint8Array): Promise<void> {
  if (!process.stdout.write(text)) {
    await new Promise<void>((resolve) => process.stdout.once('drain', resolve))
  }
}

/** Writes one line to stdout. */
export function outLine(line: string): Promise<void> {
  return out(`${line}\n`)
}

/** Writes a line to stderr (notes and reports that must not mix with data on stdout). */
export function errLine(line: string): void {
  process.stderr.write(`${line}\n`)
}

/** Milliseconds since the epoch as an ISO 8601 string, or `-`. */
export function isoTime(ms: number | undefined): string {
  return ms === undefined ? '-' : new Date(ms).toISOString()
}

/** Aligns rows of cells into columns (the last column is not padded). */
export function alignRows(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = []
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length)
    })
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  )
}

/**
 * A key, value or message for the terminal: control, separator and bidirectional
 * formatting characters escaped as `\uXXXX` (core's `escapeForDisplay`), so none can drive
 * the terminal or reorder the line it is printed on.
 */
export function printable(text: string): string {
  return escapeForDisplay(text)
}
