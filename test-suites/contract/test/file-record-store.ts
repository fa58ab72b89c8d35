import { createHash, randomUUID } from 'node:crypto'
import { constants } from 'node:fs'
import { link, mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { AgentStateError, type RecordStore, type ScannedRecord } from '@agent-state/core'

/**
 * A small test-only RecordStore on the filesystem, safe across processes, so
 * the suite's multi-process and crash tiers can be exercised here without
 * another team's backend. Each key is a directory of immutable, numbered
 * versions; a conditional write of version n+1 is `link(temp, n+1)`, which
 * fails when anyone wrote n+1 first. Modes break it on purpose:
 * - `racy`: checks the version, then renames over the target (check-then-write);
 * - `lazy`: acknowledges writes before they reach the disk;
 * - `cached-names`: lists from a per-process cache of key names that only this
 *   process's own writes invalidate (right inside one process, stale across);
 * - `locked`: correct, but each commit holds a per-key lock file that waiters
 *   never break (they fail with `UNAVAILABLE` after 3 s), so a writer frozen
 *   inside its commit blocks every takeover: the frozen-writer tier's mutant.
 */
export type FileStoreMode = 'correct' | 'racy' | 'lazy' | 'cached-names' | 'locked'

/** The write step {@link FileRecordStoreOptions.onStep} reports (the suite's `writeSteps`). */
export const FILE_STORE_STEPS: readonly string[] = ['data-written']

/** The `cached-names` mode's per-process cache: directory to its key names. */
const nameCache = new Map<string, string[]>()

/** Options of {@link createFileRecordStore}. */
export interface FileRecordStoreOptions {
  readonly root: string
  readonly namespace: string
  readonly mode?: FileStoreMode
  /** Called when a commit's data is durable and not yet linked (lock held in `locked` mode). */
  readonly onStep?: (step: string) => void
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function code(error: unknown): string | undefined {
  return (error as { code?: string }).code
}

async function durableWrite(path: string, data: Uint8Array): Promise<void> {
  const handle = await open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600)
  try {
    await handle.writeFile(data)
    await handle.sync()
  } finally {
    await handle.close()
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path)
    return true
  } catch (error) {
    if (code(error) === 'ENOENT') return false
    throw error
  }
}

async function syncDir(path: string): Promise<void> {
  const handle = await open(path, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

/** The key held by each key directory's `key` file, by path: immutable once written. */
const keyOfDir = new Map<string, string>()

/** Creates the store. */
export function createFileRecordStore(options: FileRecordStoreOptions): RecordStore {
  const dir = join(options.root, options.namespace)
  const mode = options.mode ?? 'correct'
  const pending = new Map<string, { data: Uint8Array; version: string }>()
  const keyDir = (key: string) => join(dir, createHash('sha256').update(key).digest('hex'))

  async function latest(key: string): Promise<number> {
    try {
      const names = await readdir(keyDir(key))
      return names.reduce(
        (max, name) => (/^\d+$/.test(name) ? Math.max(max, Number(name)) : max),
        0,
      )
    } catch (error) {
      if (code(error) === 'ENOENT') return 0
      throw error
    }
  }

  async function readDisk(key: string): Promise<{ data: Uint8Array; version: string } | null> {
    for (;;) {
      const n = await latest(key)
      if (n === 0) return null
      try {
        return {
          data: new Uint8Array(await readFile(join(keyDir(key), String(n)))),
          version: String(n),
        }
      } catch (error) {
        if (code(error) !== 'ENOENT') throw error
      }
    }
  }

  /** The `locked` mode's lock: exclusive creation, waited for, never broken. */
  async function lock(kd: string): Promise<() => Promise<void>> {
    const path = join(kd, 'lock')
    const deadline = Date.now() + 3000
    for (;;) {
      try {
        await (
          await open(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o600)
        ).close()
        return () => unlink(path)
      } catch (error) {
        if (code(error) !== 'EEXIST') throw error
        if (Date.now() > deadline) throw new AgentStateError('UNAVAILABLE', 'record locked')
        await sleep(5)
      }
    }
  }

  async function commit(key: string, data: Uint8Array, target: number): Promise<void> {
    const kd = keyDir(key)
    await mkdir(kd, { recursive: true, mode: 0o700 })
    const unlock = mode === 'locked' ? await lock(kd) : undefined
    const tmp = join(kd, `tmp-${randomUUID()}`)
    try {
      await durableWrite(tmp, new TextEncoder().encode(key))
      await rename(tmp, join(kd, 'key'))
      await durableWrite(tmp, data)
      options.onStep?.('data-written')
      if (mode === 'racy') await rename(tmp, join(kd, String(target)))
      else {
        try {
          await link(tmp, join(kd, String(target)))
        } catch (error) {
          if (code(error) === 'EEXIST')
            throw new AgentStateError('PRECONDITION_FAILED', 'record changed')
          throw error
        }
      }
      await syncDir(kd)
      nameCache.delete(dir)
    } finally {
      await unlink(tmp).catch(() => undefined)
      await unlock?.()
    }
  }

  return {
    name: `file-records-${mode}`,
    capabilities: {
      durable: true,
      multiProcess: true,
      multiHost: false,
      maxKeyBytes: 1024,
      maxValueBytes: 64 * 1024 * 1024,
    },
    async read(key) {
      return pending.get(key) ?? readDisk(key)
    },
    async write(key, data, condition) {
      const current = pending.get(key)?.version ?? String(await latest(key))
      const expected = 'absent' in condition ? '0' : condition.version
      if (mode !== 'correct' && mode !== 'locked' && current !== expected)
        throw new AgentStateError('PRECONDITION_FAILED', 'record changed')
      // Version files are never removed, so "n exists and n+1 is free" means n is the latest:
      // without this check a version the key never had (n > latest) would create n+1.
      // (A lazy store's pending version is not on disk yet, and is the latest.)
      if (
        expected !== '0' &&
        pending.get(key)?.version !== expected &&
        !(await exists(join(keyDir(key), expected)))
      )
        throw new AgentStateError('PRECONDITION_FAILED', 'record changed')
      const target = Number(expected) + 1
      if (mode === 'racy') await sleep(1)
      if (mode === 'lazy') {
        pending.set(key, { data: data.slice(), version: String(target) })
        setTimeout(() => void commit(key, data, target).finally(() => pending.delete(key)), 50)
        return String(target)
      }
      await commit(key, data, target)
      return String(target)
    },
    async scan({ prefix, after, limit }) {
      let keys = mode === 'cached-names' ? nameCache.get(dir) : undefined
      if (keys === undefined) {
        let names: string[]
        try {
          names = await readdir(dir)
        } catch (error) {
          if (code(error) === 'ENOENT') return { records: [], done: true }
          throw error
        }
        // A key's directory is named by the key's hash, so the key it holds never changes: read
        // each once (in parallel), not on every page. Rereading every key file sequentially on
        // every page took a listing check past its 120 s at load 15.
        const read = await Promise.all(
          names.map(async (name) => {
            const path = join(dir, name, 'key')
            const known = keyOfDir.get(path)
            if (known !== undefined) return known
            try {
              const key = await readFile(path, 'utf8')
              keyOfDir.set(path, key)
              return key
            } catch (error) {
              if (code(error) !== 'ENOENT') throw error
              return undefined
            }
          }),
        )
        keys = read.filter((key): key is string => key !== undefined)
        if (mode === 'cached-names') nameCache.set(dir, keys)
      }
      const cmp = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))
      const candidates = keys
        .filter((k) => k.startsWith(prefix) && (after === undefined || cmp(k, after) > 0))
        .sort(cmp)
      const records: ScannedRecord[] = []
      for (const key of candidates.slice(0, limit)) {
        const record = await this.read(key)
        if (record !== null) records.push({ key, data: record.data })
      }
      return { records, done: candidates.length <= limit }
    },
    async destroy() {
      await rm(dir, { recursive: true, force: true })
    },
    async close() {},
  }
}
