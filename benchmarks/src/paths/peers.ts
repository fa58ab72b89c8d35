import { compareUtf8 } from '@agent-state/core'
import type { Keyv } from 'keyv'
import type { Storage } from 'unstorage'
import {
  type BackendKind,
  forEachConcurrent,
  type PageResult,
  populatedKey,
  type Subject,
} from '../subject.js'

/**
 * Keyv and unstorage, used the way their documentation shows. Neither has a
 * conditional write, a lease or a paged listing, so:
 * - `cas` and `create` are a plain set (what users of these libraries do
 *   today: last writer wins), reported as such;
 * - the listing page is "all keys under the prefix, sorted, sliced after the
 *   cursor", the least a caller must do to page through them.
 */
const PEER_NOTES = {
  cas: 'plain set (no compare-and-set in the library)',
  create: 'plain set (no create-if-absent in the library)',
  list: 'reads every key under the prefix, sorts, slices one page (no paging in the library)',
}

/**
 * What a peer offers for the conditional workloads: a plain set (see
 * PEER_NOTES), and bulk population through the same `put`.
 */
function plainSetWrites(
  put: Subject['put'],
): Required<Pick<Subject, 'casInit' | 'cas' | 'create' | 'populate'>> {
  return {
    async casInit(key, value) {
      await put(key, value)
      return undefined
    },
    async cas(key, value) {
      await put(key, value)
      return undefined
    },
    async create(key, value) {
      await put(key, value)
    },
    async populate(prefix, count, value) {
      await forEachConcurrent(count, 64, (index) => put(populatedKey(prefix, index), value))
    },
  }
}

function pageOf(sorted: readonly string[], limit: number, cursor: string | undefined): PageResult {
  let start = 0
  if (cursor !== undefined) {
    // Binary search for the first key after the cursor.
    let low = 0
    let high = sorted.length
    while (low < high) {
      const middle = (low + high) >> 1
      if (compareUtf8(sorted[middle] as string, cursor) <= 0) low = middle + 1
      else high = middle
    }
    start = low
  }
  const keys = sorted.slice(start, start + limit)
  const last = keys[keys.length - 1]
  return start + limit < sorted.length && last !== undefined ? { keys, cursor: last } : { keys }
}

function asBytes(value: unknown, key: string): Uint8Array | null {
  if (value === null || value === undefined) return null
  if (value instanceof Uint8Array) return value
  // unstorage's s3 driver resolves getItemRaw with the fetch body's ArrayBuffer.
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  throw new Error(`peer returned a ${typeof value} for ${key}, not bytes`)
}

/**
 * A Keyv instance as a subject. `listKeys` returns every key of the store
 * under a prefix when the adapter can iterate (omit it when it cannot).
 */
export function keyvSubject(
  keyv: Keyv,
  kind: BackendKind,
  label: string,
  onClose: () => Promise<void>,
): Subject {
  const put: Subject['put'] = async (key, value) => {
    await keyv.set(key, Buffer.from(value.buffer, value.byteOffset, value.byteLength))
  }
  const subject: Subject = {
    backend: kind,
    path: 'keyv',
    label,
    notes: PEER_NOTES,
    put,
    ...plainSetWrites(put),
    async get(key) {
      return asBytes(await keyv.get(key), key)
    },
    async head(key) {
      return keyv.has(key)
    },
    async delete(key) {
      await keyv.delete(key)
    },
    async close() {
      await onClose()
    },
  }
  const iterator = keyv.iterator
  if (iterator !== undefined) {
    subject.listPage = async (prefix, limit, cursor) => {
      const keys: string[] = []
      for await (const entry of iterator.call(keyv, undefined)) {
        const key = (entry as unknown[])[0]
        if (typeof key === 'string' && key.startsWith(prefix)) keys.push(key)
      }
      keys.sort(compareUtf8)
      return pageOf(keys, limit, cursor)
    }
  }
  return subject
}

/** unstorage uses `:` as its separator; our keys are ASCII with `/`, so the mapping is exact. */
const toUnstorage = (key: string): string => key.replaceAll('/', ':')
const fromUnstorage = (key: string): string => key.replaceAll(':', '/')

/** An unstorage `Storage` (one driver mounted at the root) as a subject, using its raw-bytes calls. */
export function unstorageSubject(
  storage: Storage,
  kind: BackendKind,
  label: string,
  onClose: () => Promise<void>,
  options: { listing?: boolean; extraNotes?: Record<string, string> } = {},
): Subject {
  const put: Subject['put'] = async (key, value) => {
    await storage.setItemRaw(toUnstorage(key), value)
  }
  const subject: Subject = {
    backend: kind,
    path: 'unstorage',
    label,
    notes: { ...PEER_NOTES, ...options.extraNotes },
    put,
    ...plainSetWrites(put),
    async get(key) {
      return asBytes(await storage.getItemRaw(toUnstorage(key)), key)
    },
    async head(key) {
      return storage.hasItem(toUnstorage(key))
    },
    async delete(key) {
      await storage.removeItem(toUnstorage(key))
    },
    async close() {
      await storage.dispose()
      await onClose()
    },
  }
  if (options.listing !== false) {
    subject.listPage = async (prefix, limit, cursor) => {
      // getKeys takes a base ending at a separator; filter for a plain string prefix.
      const cut = prefix.lastIndexOf('/')
      const base = cut < 0 ? '' : toUnstorage(prefix.slice(0, cut + 1))
      const keys = (await storage.getKeys(base))
        .map(fromUnstorage)
        .filter((key) => key.startsWith(prefix))
      keys.sort(compareUtf8)
      return pageOf(keys, limit, cursor)
    }
  }
  return subject
}

export { pageOf }
