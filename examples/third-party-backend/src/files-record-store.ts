import { createHash, randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import {
  AgentStateError,
  compareUtf8,
  isAgentStateError,
  type RecordStore,
  type ScannedRecord,
} from '@agent-state/core'

/** Options of {@link createFilesRecordStore}. */
export interface FilesRecordStoreOptions {
  /** Directory holding one subdirectory per namespace. */
  readonly root: string
  /** The namespace this store serves (a safe directory name: core checks it). */
  readonly namespace: string
}

/**
 * One file per record: `<sha256 of the key>`, holding a header line
 * `{"key":…,"version":…}` and then the record's bytes. A write replaces the
 * file by a complete temp file (fsynced, then renamed, then the directory
 * fsynced), so a reader never sees a partial record and a written record
 * survives a crash. The version check and the rename run under a lock per
 * namespace directory shared by every instance in this process: that makes
 * the conditional write atomic across instances, but not across processes,
 * so the store claims `multiProcess: false`.
 */
export function createFilesRecordStore(options: FilesRecordStoreOptions): RecordStore {
  const dir = join(options.root, options.namespace)
  const fileOf = (key: string) => join(dir, createHash('sha256').update(key).digest('hex'))

  return {
    name: 'files',
    capabilities: {
      durable: true,
      multiProcess: false,
      multiHost: false,
      maxKeyBytes: 1024,
      maxValueBytes: 16 * 1024 * 1024,
    },
    async read(key) {
      const file = await readRecordFile(fileOf(key))
      return file === null ? null : { data: file.data, version: file.version }
    },
    write(key, data, condition) {
      return withLock(dir, async () => {
        const current = await readRecordFile(fileOf(key))
        const holds =
          'absent' in condition ? current === null : current?.version === condition.version
        if (!holds) throw new AgentStateError('PRECONDITION_FAILED', `record ${key} changed`)
        // Unique per write, so a version never comes back for a key (no ABA).
        const version = `${Date.now().toString(36)}-${randomUUID()}`
        await fsCall(`write ${key}`, () => writeRecordFile(dir, fileOf(key), key, version, data))
        return version
      })
    },
    async scan({ prefix, after, limit }) {
      let names: string[]
      try {
        names = await readdir(dir)
      } catch (error) {
        if ((error as { code?: string }).code === 'ENOENT') return { records: [], done: true }
        throw fsError('scan', error)
      }
      const keys: string[] = []
      for (const name of names) {
        if (name.startsWith('tmp-')) continue
        const key = await keyOf(join(dir, name))
        if (key === undefined) continue
        if (key.startsWith(prefix) && (after === undefined || compareUtf8(key, after) > 0)) {
          keys.push(key)
        }
      }
      keys.sort(compareUtf8)
      const records: ScannedRecord[] = []
      for (const key of keys.slice(0, limit)) {
        const file = await readRecordFile(fileOf(key))
        if (file !== null) records.push({ key, data: file.data })
      }
      return { records, done: keys.length <= limit }
    },
    destroy() {
      return withLock(dir, () => fsCall('destroy', () => rm(dir, { recursive: true, force: true })))
    },
    async close() {},
  }
}

/** The lock of each namespace directory: one promise chain per directory, for this process. */
const locks = new Map<string, Promise<unknown>>()

async function withLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  const previous = locks.get(dir) ?? Promise.resolve()
  const run = previous.then(work, work)
  const settled = run.catch(() => undefined)
  locks.set(dir, settled)
  try {
    return await run
  } finally {
    if (locks.get(dir) === settled) locks.delete(dir)
  }
}

/** A file's name is the hash of its key, so a name's key never changes: cache it. */
const keysByFile = new Map<string, string>()

async function keyOf(path: string): Promise<string | undefined> {
  const cached = keysByFile.get(path)
  if (cached !== undefined) return cached
  const file = await readRecordFile(path)
  if (file === null) return undefined
  keysByFile.set(path, file.key)
  return file.key
}

async function readRecordFile(
  path: string,
): Promise<{ key: string; version: string; data: Uint8Array } | null> {
  let bytes: Buffer
  try {
    bytes = await readFile(path)
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return null
    throw fsError(`read ${path}`, error)
  }
  const end = bytes.indexOf(0x0a)
  try {
    const header = JSON.parse(bytes.toString('utf8', 0, end)) as {
      key?: unknown
      version?: unknown
    }
    if (end < 0 || typeof header.key !== 'string' || typeof header.version !== 'string') {
      throw new Error('bad header')
    }
    return { key: header.key, version: header.version, data: bytes.subarray(end + 1) }
  } catch (cause) {
    // A damaged record is an error, never an empty key.
    throw new AgentStateError('CORRUPT', `Record file ${path} has no valid header`, { cause })
  }
}

async function writeRecordFile(
  dir: string,
  path: string,
  key: string,
  version: string,
  data: Uint8Array,
): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 })
  const tmp = join(dir, `tmp-${randomUUID()}`)
  const handle = await open(tmp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600)
  try {
    await handle.writeFile(`${JSON.stringify({ key, version })}\n`)
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
  try {
    await rename(tmp, path)
  } catch (error) {
    await unlink(tmp).catch(() => undefined)
    throw error
  }
  const dirHandle = await open(dir, 'r')
  try {
    await dirHandle.sync()
  } finally {
    await dirHandle.close()
  }
}

async function fsCall<T>(what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw fsError(what, error)
  }
}

/** Raw filesystem errors never escape: they become the cause of an AgentStateError. */
function fsError(what: string, error: unknown): AgentStateError {
  if (isAgentStateError(error)) return error
  const code = (error as { code?: string }).code
  return new AgentStateError('UNAVAILABLE', `files store: ${what} failed (${code ?? 'error'})`, {
    cause: error,
  })
}
