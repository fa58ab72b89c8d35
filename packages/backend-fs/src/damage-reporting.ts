import { join } from 'node:path'
import {
  AgentStateError,
  type Backend,
  collectListPage,
  decodeKeyState,
  type Lease,
  type ListEntry,
  type ListOptions,
  type ListPage,
  metaOf,
  normalizeListOptions,
} from '@agent-state/core'
import type { FsRecordStore } from './fs-record-store.js'
import { fileNameOf } from './key-layout.js'
import { isDamage, type ScannedItem } from './record-listing.js'

/**
 * How the fs backend reports damaged records: loudly, with the file's path,
 * without letting one damaged file hide the rest of the namespace.
 *
 * - Every `CORRUPT` or `INCOMPATIBLE_SCHEMA` error names the damaged file
 *   (`context.file` and the message): the documented fix is to move that file
 *   away.
 * - `list` never fails on a damaged record and never drops it either. A
 *   damaged record whose key is known (from its file name, or from an intact
 *   envelope) is listed in its place in key order, counted against `limit`
 *   and grouped by `delimiter` like any key, as an entry with `version: ''`
 *   and a `corrupt` marker giving the error code, the file and the message;
 *   `get`/`head`/`put` of that key keep failing with the error until the file
 *   is moved away. A hashed-name file (keys over 120 bytes) whose envelope is
 *   damaged has no readable key, so it has no place in key order: it is
 *   reported in the page's `unreadable` field, on the first page (no cursor)
 *   of every listing whatever its prefix. I/O and permission errors still
 *   fail the listing (`UNAVAILABLE`): they are not damage of one record.
 */

/** Why a record cannot be read, as a listing reports it. */
export interface DamagedRecordInfo {
  /** `CORRUPT`, or `INCOMPATIBLE_SCHEMA` for a record of a newer format. */
  readonly code: 'CORRUPT' | 'INCOMPATIBLE_SCHEMA'
  /** Absolute path of the damaged record file. */
  readonly file: string
  /** The error's message. */
  readonly message: string
}

/** A listing entry of the fs backend: `corrupt` is set on a damaged record (then `version` is `''`). */
export interface FsListEntry extends ListEntry {
  readonly corrupt?: DamagedRecordInfo
}

/** A listing page of the fs backend. */
export interface FsListPage extends ListPage {
  readonly entries: readonly FsListEntry[]
  /** Damaged files whose key cannot be read; only on a listing's first page, only when there are any. */
  readonly unreadable?: readonly DamagedRecordInfo[]
}

/** The fs backend: a {@link Backend} whose listings report damaged records. */
export interface FsBackend extends Backend {
  list(options?: ListOptions): Promise<FsListPage>
}

/** `message`, naming `file` unless it already does. */
function withPath(message: string, file: string): string {
  return message.includes(file) ? message : `${message} (record file ${file})`
}

function infoOf(error: AgentStateError, file: string): DamagedRecordInfo {
  return {
    code: error.code as DamagedRecordInfo['code'],
    file,
    message: withPath(error.message, file),
  }
}

function entryOf(item: ScannedItem): FsListEntry | null {
  if ('problem' in item)
    return { key: item.key, version: '', corrupt: infoOf(item.problem, item.file) }
  let meta: ReturnType<typeof metaOf>
  try {
    meta = metaOf(item.key, decodeKeyState(item.key, item.data))
  } catch (error) {
    if (!isDamage(error)) throw error
    return { key: item.key, version: '', corrupt: infoOf(error, item.file) }
  }
  if (meta === null) return null // a tombstone or a lease without a value
  return { key: meta.key, version: meta.version, size: meta.size, updatedAt: meta.updatedAt }
}

/**
 * Wraps core's Backend over the fs store: `list` reports damage as described
 * above, and every damage error of the other operations names its file.
 */
export function withDamageReporting(backend: Backend, store: FsRecordStore): FsBackend {
  const { recordsDir } = store.layout
  let closed = false

  function named(error: unknown, key: string): unknown {
    if (!isDamage(error) || typeof error.context.file === 'string') return error
    const file = join(recordsDir, fileNameOf(key))
    return new AgentStateError(error.code, withPath(error.message, file), {
      context: { ...error.context, file },
      cause: error,
      retryable: error.retryable,
    })
  }

  async function byKey<T>(key: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run()
    } catch (error) {
      throw named(error, key)
    }
  }

  async function list(listOptions?: ListOptions): Promise<FsListPage> {
    if (closed) throw new AgentStateError('CLOSED', `Backend ${backend.name} is closed`)
    const normalized = normalizeListOptions(listOptions)
    let unreadable: readonly DamagedRecordInfo[] = []
    const page = await collectListPage(normalized, async (position, max) => {
      const scan = store.scanChecked(
        position === undefined
          ? { prefix: normalized.prefix, limit: max }
          : {
              prefix: normalized.prefix,
              after: position.group ? `${position.after}\u{10FFFF}` : position.after,
              limit: max,
            },
      )
      unreadable = scan.unreadable.map(({ problem, file }) => infoOf(problem, file))
      const entries: FsListEntry[] = []
      for (const item of scan.items) {
        const entry = entryOf(item)
        if (entry !== null) entries.push(entry)
      }
      const last = scan.items[scan.items.length - 1]
      return last === undefined
        ? { entries, done: scan.done }
        : { entries, done: scan.done, examinedUpTo: last.key }
    })
    if (normalized.position !== undefined || unreadable.length === 0) return page
    return { ...page, unreadable }
  }

  return {
    ...backend,
    get: (key) => byKey(key, () => backend.get(key)),
    head: (key) => byKey(key, () => backend.head(key)),
    put: (key, value, options) => byKey(key, () => backend.put(key, value, options)),
    delete: (key, options) => byKey(key, () => backend.delete(key, options)),
    list,
    acquireLease: (key, options) => byKey(key, () => backend.acquireLease(key, options)),
    renewLease: (lease: Lease) => byKey(lease?.key, () => backend.renewLease(lease)),
    releaseLease: (lease: Lease) => byKey(lease?.key, () => backend.releaseLease(lease)),
    getLease: (key) => byKey(key, () => backend.getLease(key)),
    async close(): Promise<void> {
      closed = true
      await backend.close()
    },
  }
}
