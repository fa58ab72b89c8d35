import { compareUtf8 } from '@agent-state/core'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { Keyv } from 'keyv'
import { createStorage } from 'unstorage'
import memoryDriver from 'unstorage/drivers/memory'
import { type CasToken, populatedKey, type Subject } from '../subject.js'
import { agentStateSubject } from './agent-state.js'
import { keyvSubject, unstorageSubject } from './peers.js'

interface RawEntry {
  value: Uint8Array
  version: number
}

/**
 * The raw in-process equivalent: a `Map` of `{ value, version }` plus a
 * sorted key array for paging. It copies the value (the caller may reuse its
 * buffer) and keeps a version for compare-and-set, which is the least any
 * correct store must do.
 */
function rawMemorySubject(): Subject {
  const map = new Map<string, RawEntry>()
  let sorted: string[] = []
  let sortedDirty = false
  let versions = 0

  const write = (key: string, value: Uint8Array): number => {
    const version = ++versions
    if (!map.has(key)) sortedDirty = true
    map.set(key, { value: value.slice(), version })
    return version
  }
  const subject: Subject = {
    backend: 'memory',
    path: 'raw',
    label: 'raw Map',
    notes: {
      lease: 'three version-checked Map writes (acquire, renew, release)',
      list: 'sorted key array (re-sorted after inserts), binary search, slice',
    },
    async put(key, value) {
      write(key, value)
    },
    async get(key) {
      return map.get(key)?.value ?? null
    },
    async head(key) {
      return map.has(key)
    },
    async delete(key) {
      if (map.delete(key)) sortedDirty = true
    },
    async casInit(key, value) {
      return write(key, value)
    },
    async cas(key, value, token: CasToken) {
      const entry = map.get(key)
      if (entry === undefined || entry.version !== token)
        throw new Error(`raw CAS conflict on ${key}`)
      return write(key, value)
    },
    async create(key, value) {
      if (map.has(key)) throw new Error(`raw create: ${key} exists`)
      write(key, value)
    },
    async leaseCycle(key) {
      const lease = `${key}#lease`
      const empty = new Uint8Array(0)
      let token = map.get(lease)?.version
      for (let step = 0; step < 3; step++) {
        if (map.get(lease)?.version !== token) throw new Error('raw lease conflict')
        token = write(lease, empty)
      }
    },
    async listPage(prefix, limit, cursor) {
      if (sortedDirty) {
        sorted = [...map.keys()].sort(compareUtf8)
        sortedDirty = false
      }
      const from = lowerBound(sorted, cursor ?? prefix, cursor !== undefined)
      let to = from
      while (to < sorted.length && to - from < limit && (sorted[to] as string).startsWith(prefix))
        to++
      const keys = sorted.slice(from, to)
      const more = to < sorted.length && (sorted[to] as string).startsWith(prefix)
      const last = keys[keys.length - 1]
      return more && last !== undefined ? { keys, cursor: last } : { keys }
    },
    async populate(prefix, count, value) {
      for (let index = 0; index < count; index++) write(populatedKey(prefix, index), value)
    },
    async close() {
      map.clear()
    },
  }
  return subject
}

/** First index whose key is greater than (or, when not `exclusive`, equal to) `bound`. */
function lowerBound(sorted: readonly string[], bound: string, exclusive: boolean): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const middle = (low + high) >> 1
    const order = compareUtf8(sorted[middle] as string, bound)
    if (order < 0 || (exclusive && order === 0)) low = middle + 1
    else high = middle
  }
  return low
}

/** agent-state memory, the raw Map, Keyv (its default Map store) and unstorage (memory driver). */
export async function memorySubjects(): Promise<Subject[]> {
  const keyv = new Keyv({ throwOnErrors: true })
  const storage = createStorage({ driver: memoryDriver() })
  const subjects: Subject[] = [
    agentStateSubject(createMemoryBackend({ store: createMemoryStore() }), 'memory'),
    rawMemorySubject(),
    keyvSubject(keyv, 'memory', 'Keyv (Map store)', async () => keyv.clear()),
    unstorageSubject(storage, 'memory', 'unstorage (memory driver)', async () => {}, {
      extraNotes: {
        put: "keeps the caller's buffer by reference (no copy), so its cost does not grow with the value size",
      },
    }),
  ]
  return subjects
}
