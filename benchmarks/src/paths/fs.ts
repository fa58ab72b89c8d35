import {
  closeSync,
  fsync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  promises,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { compareUtf8 } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createStorage } from 'unstorage'
import fsDriver from 'unstorage/drivers/fs'
import { populatedKey, type Subject } from '../subject.js'
import { agentStateSubject } from './agent-state.js'
import { pageOf, unstorageSubject } from './peers.js'

const isMissing = (error: unknown): boolean => (error as NodeJS.ErrnoException).code === 'ENOENT'

/**
 * The raw filesystem doing the least a durable atomic write needs: write a
 * temp file, fsync it, rename it over the key's file, fsync the directory
 * (its descriptor kept open), as in the baseline. Keys map to nested
 * directories (`a/b/c` is `root/a/b/c`). Writes use the sync API at
 * concurrency 1 (cheapest there) and `fs.promises` above it (cheapest there);
 * reads use the sync API at every concurrency, like the backend.
 */
export function rawFsSubject(root: string): Subject {
  const dirFds = new Map<string, number>()
  let async = false
  let temps = 0

  const dirFd = (dir: string): number => {
    let fd = dirFds.get(dir)
    if (fd === undefined) {
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      fd = openSync(dir, 'r')
      dirFds.set(dir, fd)
    }
    return fd
  }
  const pathOf = (key: string): string => join(root, key)
  const tempOf = (file: string): string => `${file}.tmp-${process.pid}-${temps++}`

  function writeTempSync(file: string, value: Uint8Array): string {
    const temp = tempOf(file)
    const fd = openSync(temp, 'w', 0o600)
    try {
      writeSync(fd, value)
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
    return temp
  }
  async function writeTemp(file: string, value: Uint8Array): Promise<string> {
    const temp = tempOf(file)
    const handle = await promises.open(temp, 'w', 0o600)
    try {
      await handle.write(value)
      await handle.sync()
    } finally {
      await handle.close()
    }
    return temp
  }
  const fsyncDir = (fd: number): Promise<void> =>
    new Promise((resolve, reject) => fsync(fd, (error) => (error ? reject(error) : resolve())))

  async function durableWrite(key: string, value: Uint8Array): Promise<void> {
    const file = pathOf(key)
    const dir = dirFd(dirname(file))
    if (!async) {
      renameSync(writeTempSync(file, value), file)
      fsyncSync(dir)
      return
    }
    await promises.rename(await writeTemp(file, value), file)
    await fsyncDir(dir)
  }

  const subject: Subject = {
    backend: 'fs',
    path: 'raw',
    label: 'raw fs (tmp+fsync+rename+fsync dir)',
    notes: {
      cas: 'the same durable atomic write (a file write has no compare-and-set)',
      create: 'tmp+fsync, link() to the key (fails if it exists), unlink tmp, fsync dir',
      lease: 'three durable atomic writes of a lease file',
      list: 'readdir of the prefix directory, sort, slice one page',
      delete: 'unlink + fsync dir',
      get: 'readFileSync at every concurrency (the backend reads synchronously too)',
      head: 'statSync at every concurrency (the backend reads synchronously too)',
    },
    prepareFor(concurrency) {
      async = concurrency > 1
    },
    put: durableWrite,
    // Reads use the synchronous calls at every concurrency, as the backend
    // does (`readRecordFile`): a page-cache read is cheaper than a trip
    // through libuv's pool, and the pool's queue at c=64 made the raw side
    // ~75x slower per read than the backend it was compared with.
    async get(key) {
      try {
        return readFileSync(pathOf(key))
      } catch (error) {
        if (isMissing(error)) return null
        throw error
      }
    },
    async head(key) {
      try {
        statSync(pathOf(key))
        return true
      } catch (error) {
        if (isMissing(error)) return false
        throw error
      }
    },
    async delete(key) {
      const file = pathOf(key)
      const dir = dirFd(dirname(file))
      try {
        if (async) await promises.unlink(file)
        else unlinkSync(file)
      } catch (error) {
        if (!isMissing(error)) throw error
      }
      if (async) await fsyncDir(dir)
      else fsyncSync(dir)
    },
    async casInit(key, value) {
      await durableWrite(key, value)
      return undefined
    },
    async cas(key, value) {
      await durableWrite(key, value)
      return undefined
    },
    async create(key, value) {
      const file = pathOf(key)
      const dir = dirFd(dirname(file))
      if (!async) {
        const temp = writeTempSync(file, value)
        try {
          linkSync(temp, file)
        } finally {
          unlinkSync(temp)
        }
        fsyncSync(dir)
        return
      }
      const temp = await writeTemp(file, value)
      try {
        await promises.link(temp, file)
      } finally {
        await promises.unlink(temp)
      }
      await fsyncDir(dir)
    },
    async leaseCycle(key) {
      const lease = new Uint8Array(64)
      for (let step = 0; step < 3; step++) {
        lease[0] = step
        await durableWrite(`${key}.lease`, lease)
      }
    },
    async listPage(prefix, limit, cursor) {
      const cut = prefix.lastIndexOf('/')
      const dirKey = prefix.slice(0, cut + 1)
      const leaf = prefix.slice(cut + 1)
      let names: string[]
      try {
        names = async ? await promises.readdir(join(root, dirKey)) : readdirSync(join(root, dirKey))
      } catch (error) {
        if (isMissing(error)) return { keys: [] }
        throw error
      }
      const keys = names
        .filter((name) => name.startsWith(leaf) && !name.includes('.tmp-'))
        .map((name) => `${dirKey}${name}`)
        .sort(compareUtf8)
      return pageOf(keys, limit, cursor)
    },
    async populate(prefix, count, value) {
      // Setup only: no fsync needed to create the listing population.
      const dir = join(root, prefix.slice(0, prefix.lastIndexOf('/') + 1))
      mkdirSync(dir, { recursive: true, mode: 0o700 })
      for (let index = 0; index < count; index++) {
        const file = join(root, populatedKey(prefix, index))
        const fd = openSync(file, 'w', 0o600)
        writeSync(fd, value)
        closeSync(fd)
      }
    },
    async close() {
      for (const fd of dirFds.values()) closeSync(fd)
      dirFds.clear()
    },
  }
  return subject
}

/** agent-state fs, the raw filesystem and unstorage (fs driver), each in its own directory of `dataDir`. */
export async function fsSubjects(dataDir: string): Promise<Subject[]> {
  const storage = createStorage({ driver: fsDriver({ base: join(dataDir, 'unstorage') }) })
  const root = join(dataDir, 'agent-state')
  const backend = createFsBackend({ root, namespace: 'bench' })
  return [
    agentStateSubject(backend, 'fs', {
      populateWith: () => createFsBackend({ root, namespace: 'bench', fsync: false }),
    }),
    rawFsSubject(join(dataDir, 'raw')),
    unstorageSubject(storage, 'fs', 'unstorage (fs driver)', async () => {}, {
      extraNotes: {
        put: 'writeFile in place: no fsync, not atomic',
        delete: 'unlink, no fsync',
      },
    }),
  ]
}
