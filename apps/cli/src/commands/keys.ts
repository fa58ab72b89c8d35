import type { Backend, ValueMeta, WriterIdentity } from '@agent-state/core'
import { printable } from '../output.js'

/** One row of a key listing: a key, or (with a delimiter) a group of deeper keys. */
export type KeyRow =
  | {
      readonly type: 'key'
      readonly key: string
      readonly version: string
      readonly size?: number
      readonly updatedAt?: number
      /** Only with `long`: read with `head`. `null` when the write named no writer. */
      readonly writer?: WriterIdentity | null
    }
  | { readonly type: 'prefix'; readonly prefix: string }

/** Options of {@link listKeys}. */
export interface ListKeysOptions {
  readonly prefix?: string
  /** Group deeper keys under `/`-ending prefixes (default), or list every key. */
  readonly recursive?: boolean
  /** Stop after this many rows. */
  readonly limit?: number
  /** Also read each key's writer (one `head` per key). */
  readonly long?: boolean
}

const PAGE = 1000
const HEAD_CONCURRENCY = 8

/**
 * Walks a listing page by page. Only `list` is called, which never reads a
 * value body (sizes and times are shown where the backend's listing has
 * them); `long` adds one `head` per key for the writer identity.
 */
export async function* listKeys(
  backend: Backend,
  options: ListKeysOptions = {},
): AsyncGenerator<KeyRow> {
  let cursor: string | undefined
  let left = options.limit ?? Number.POSITIVE_INFINITY
  do {
    const page = await backend.list({
      ...(options.prefix === undefined || options.prefix === '' ? {} : { prefix: options.prefix }),
      ...(options.recursive === true ? {} : { delimiter: '/' as const }),
      ...(cursor === undefined ? {} : { cursor }),
      limit: Math.min(PAGE, left),
    })
    // Merge entries and prefixes back into one byte-ordered stream.
    const rows: KeyRow[] = [
      ...page.entries.map(
        (e): KeyRow => ({
          type: 'key',
          key: e.key,
          version: e.version,
          ...(e.size === undefined ? {} : { size: e.size }),
          ...(e.updatedAt === undefined ? {} : { updatedAt: e.updatedAt }),
        }),
      ),
      ...(page.prefixes ?? []).map((prefix): KeyRow => ({ type: 'prefix', prefix })),
    ].sort((a, b) => compareBytes(nameOf(a), nameOf(b)))
    const shown = options.long === true ? await withWriters(backend, rows) : rows
    for (const row of shown) {
      if (left <= 0) return
      left--
      yield row
    }
    cursor = page.cursor
  } while (cursor !== undefined && left > 0)
}

function nameOf(row: KeyRow): string {
  return row.type === 'key' ? row.key : row.prefix
}

const encoder = new TextEncoder()
function compareBytes(a: string, b: string): number {
  return Buffer.compare(encoder.encode(a), encoder.encode(b))
}

async function withWriters(backend: Backend, rows: KeyRow[]): Promise<KeyRow[]> {
  const result: (KeyRow | null)[] = new Array(rows.length).fill(null)
  let next = 0
  const work = async (): Promise<void> => {
    while (next < rows.length) {
      const i = next++
      const row = rows[i] as KeyRow
      if (row.type === 'prefix') {
        result[i] = row
        continue
      }
      const meta: ValueMeta | null = await backend.head(row.key)
      // Deleted since it was listed: leave it out rather than invent metadata.
      if (meta === null) continue
      result[i] = {
        type: 'key',
        key: meta.key,
        version: meta.version,
        size: meta.size,
        updatedAt: meta.updatedAt,
        writer: meta.writer,
      }
    }
  }
  await Promise.all(Array.from({ length: HEAD_CONCURRENCY }, work))
  return result.filter((row): row is KeyRow => row !== null)
}

/** A writer identity as `writerId` plus its optional fields, for text output (escaped: see `printable`). */
export function writerText(writer: WriterIdentity | null | undefined): string {
  if (writer === undefined) return '-'
  if (writer === null) return '(none)'
  const extra = [
    writer.stageId === undefined ? '' : `stage=${writer.stageId}`,
    writer.sessionId === undefined ? '' : `session=${writer.sessionId}`,
    writer.workerId === undefined ? '' : `worker=${writer.workerId}`,
  ].filter((part) => part !== '')
  return printable(extra.length === 0 ? writer.writerId : `${writer.writerId} (${extra.join(' ')})`)
}
