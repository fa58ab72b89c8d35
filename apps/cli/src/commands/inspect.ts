import type { Backend, Lease, ValueMeta } from '@agent-state/core'
import { CliError, EXIT } from '../exit-codes.js'
import { alignRows, isoTime, type OutputFormat, out, outLine, printable } from '../output.js'
import { type KeyRow, type ListKeysOptions, listKeys, writerText } from './keys.js'

/** Prints a key listing in the chosen format. Resolves the number of rows printed. */
export async function printKeys(
  backend: Backend,
  options: ListKeysOptions,
  format: OutputFormat,
): Promise<number> {
  const rows: KeyRow[] = []
  let count = 0
  for await (const row of listKeys(backend, options)) {
    count++
    if (format === 'jsonl') await outLine(JSON.stringify(row))
    else rows.push(row)
  }
  if (format === 'json') {
    await outLine(
      JSON.stringify(
        {
          prefix: options.prefix ?? '',
          keys: rows.filter((r) => r.type === 'key'),
          prefixes: rows.flatMap((r) => (r.type === 'prefix' ? [r.prefix] : [])),
        },
        null,
        2,
      ),
    )
  } else if (format === 'text') {
    const lines = alignRows(
      rows.map((row) =>
        row.type === 'prefix'
          ? ['PRE', '', ...(options.long === true ? ['', ''] : []), printable(row.prefix)]
          : [
              row.size === undefined ? '-' : String(row.size),
              isoTime(row.updatedAt),
              ...(options.long === true ? [writerText(row.writer), row.version] : []),
              printable(row.key),
            ],
      ),
    )
    for (const line of lines) await outLine(line)
  }
  return count
}

/** Writes a value's bytes to stdout, exactly; a missing key is exit 4. */
export async function catValue(backend: Backend, key: string): Promise<void> {
  const stored = await backend.get(key)
  if (stored === null)
    throw new CliError(`no value at key ${printable(JSON.stringify(key))}`, EXIT.NOT_FOUND)
  await out(stored.value)
}

/** What `stat` reports: the value's meta and the key's live lease, either possibly absent. */
export interface KeyStat {
  readonly key: string
  readonly value: ValueMeta | null
  readonly lease: Lease | null
}

/** Reads a key's meta and lease (no body); a key with neither is exit 4. */
export async function statKey(backend: Backend, key: string): Promise<KeyStat> {
  const [value, lease] = await Promise.all([backend.head(key), backend.getLease(key)])
  if (value === null && lease === null) {
    throw new CliError(
      `no value and no lease at key ${printable(JSON.stringify(key))}`,
      EXIT.NOT_FOUND,
    )
  }
  return { key, value, lease }
}

/** `stat` as aligned `field value` lines. */
export function statLines(stat: KeyStat, now = Date.now()): string[] {
  const v = stat.value
  const l = stat.lease
  return alignRows([
    ['key', printable(stat.key)],
    ['value', v === null ? 'none' : 'present'],
    ...(v === null
      ? []
      : [
          ['version', v.version],
          ['size', `${v.size} bytes`],
          ['writer', writerText(v.writer)],
          ['updatedAt', isoTime(v.updatedAt)],
        ]),
    ['lease', l === null ? 'none' : `held by ${printable(l.holder)}`],
    ...(l === null
      ? []
      : [
          ['token', String(l.token)],
          ['expiresAt', `${isoTime(l.expiresAt)} (${relative(l.expiresAt - now)})`],
        ]),
  ])
}

/** A duration from now as `in 4m 10s` / `3s ago`. */
export function relative(ms: number): string {
  const abs = Math.abs(ms)
  const s = Math.round(abs / 1000)
  const text =
    s < 60
      ? `${s}s`
      : s < 3600
        ? `${Math.floor(s / 60)}m ${s % 60}s`
        : `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`
  return ms >= 0 ? `in ${text}` : `${text} ago`
}
