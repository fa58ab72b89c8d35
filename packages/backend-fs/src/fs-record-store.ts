import { randomBytes } from 'node:crypto'
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  AgentStateError,
  type RecordCondition,
  type RecordScanOptions,
  type RecordStore,
  type ScannedRecord,
  type VersionedRecord,
} from '@agent-state/core'
import { errnoOf, fsError } from './fs-errors.js'
import { tryLockSync, unlockSync } from './key-lock.js'
import { fileNameOf, TEMP_PREFIX } from './key-paths.js'
import type { ResolvedFsOptions } from './options.js'
import {
  formatIdentity,
  IDENTITY_FIELDS,
  ownerAlive,
  ownIdentity,
  parseIdentity,
} from './process-identity.js'
import {
  decodeRecordFile,
  decodeRecordHeader,
  encodeRecordFile,
  MAX_HEADER_BYTES,
} from './record-file.js'
import { type NameListing, NameListingCache, sortNames, stampOf } from './record-name-index.js'
import { selectRecords } from './scan-selection.js'

/** Where a namespace lives on disk. */
export interface FsLayout {
  /** `<root>/<namespace>` */
  readonly namespaceDir: string
  /** `<root>/<namespace>/records`: one file per key. */
  readonly recordsDir: string
  /** `<root>/<namespace>/locks`: one lock directory per key. */
  readonly locksDir: string
}

/** The on-disk layout of `namespace` under the absolute `root`. */
export function layoutOf(root: string, namespace: string): FsLayout {
  const namespaceDir = join(root, namespace)
  return {
    namespaceDir,
    recordsDir: join(namespaceDir, 'records'),
    locksDir: join(namespaceDir, 'locks'),
  }
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const O_DIRECTORY = constants.O_DIRECTORY ?? 0
const READ_FLAGS = constants.O_RDONLY | O_NOFOLLOW | (constants.O_NONBLOCK ?? 0)
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW
/** Process-unique prefix of record versions; a counter makes each write's version new. */
const VERSION_PREFIX = randomBytes(8).toString('base64url')
let versionCounter = 0

function fsyncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function notADirectory(path: string): AgentStateError {
  return new AgentStateError(
    'UNAVAILABLE',
    `fs backend path ${path} is not a directory (a symlink or file was put in its place)`,
    { context: { path }, retryable: false },
  )
}

/** Creates `dir` (0700) unless it exists; refuses anything but a real directory. Returns whether it was created. */
function ensureRealDir(dir: string): boolean {
  try {
    mkdirSync(dir, { mode: 0o700 })
    return true
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error
  }
  const stat = lstatSync(dir)
  if (!stat.isDirectory()) throw notADirectory(dir)
  return false
}

/**
 * Scratch space for record reads. Reads are synchronous, so one buffer per
 * thread is never shared by two reads; what a read returns is copied out.
 */
const scratch = Buffer.allocUnsafe(64 * 1024)

/** Enough of a file for any valid envelope. */
const HEADER_READ_BYTES = Math.max(MAX_HEADER_BYTES, 4096)

function notARegularFile(path: string, key: string | undefined): AgentStateError {
  return new AgentStateError('CORRUPT', `Record file ${path} is not a regular file`, {
    context: key === undefined ? { file: path } : { key, file: path },
  })
}

/** Opens a record file without following a symlink; `null` when absent. */
function openRecord(path: string, key: string | undefined): number | null {
  try {
    return openSync(path, READ_FLAGS)
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'ENOENT') return null
    if (code === 'ELOOP') {
      throw new AgentStateError('CORRUPT', `Record file ${path} is a symbolic link`, {
        context: key === undefined ? { file: path } : { key, file: path },
        cause: error,
      })
    }
    throw error
  }
}

/**
 * Reads up to `length` bytes from the start of a record file into the
 * scratch buffer. `O_NONBLOCK` (in READ_FLAGS) kept a planted FIFO from
 * blocking the open; a directory or FIFO fails here as not a regular file.
 */
function readStart(fd: number, length: number, path: string, key: string | undefined): number {
  try {
    return readSync(fd, scratch, 0, length, 0)
  } catch (error) {
    if (!fstatSync(fd).isFile()) throw notARegularFile(path, key)
    throw error
  }
}

/**
 * Reads a record file; `null` when absent.
 *
 * open, one read, close: a read that does not fill the scratch buffer has
 * reached the end of a regular file, so no fstat is needed for its size (a
 * short read for any other reason fails the checksums: CORRUPT, never
 * misread). Larger files are read whole after an fstat.
 */
function readRecordFile(path: string, key: string | undefined) {
  const fd = openRecord(path, key)
  if (fd === null) return null
  try {
    let filled = readStart(fd, scratch.byteLength, path, key)
    let bytes: Buffer
    if (filled < scratch.byteLength) {
      bytes = Buffer.from(scratch.subarray(0, filled))
    } else {
      const stat = fstatSync(fd)
      if (!stat.isFile()) throw notARegularFile(path, key)
      bytes = Buffer.allocUnsafe(Math.max(stat.size, filled))
      scratch.copy(bytes, 0, 0, filled)
      while (filled < bytes.byteLength) {
        const read = readSync(fd, bytes, filled, bytes.byteLength - filled, filled)
        if (read === 0) break
        filled += read
      }
      bytes = bytes.subarray(0, filled)
    }
    return decodeRecordFile(bytes, path, key)
  } finally {
    closeSync(fd)
  }
}

/**
 * The version in a record file's envelope (checked: magic, format, lengths,
 * checksum, key), reading only its first bytes; `null` when absent. What the
 * write path compares under the lock: the record's own bytes were already
 * decoded and checked by core's read before the write was attempted.
 */
function readRecordVersion(path: string, key: string): string | null {
  const fd = openRecord(path, key)
  if (fd === null) return null
  try {
    const filled = readStart(fd, HEADER_READ_BYTES, path, key)
    return decodeRecordHeader(scratch.subarray(0, filled), path, key).version
  } finally {
    closeSync(fd)
  }
}

/** Outcome of one locked write attempt. */
type WriteAttempt = { readonly version: string } | { readonly busy: true; readonly holder?: number }

/**
 * The filesystem {@link RecordStore}: one record file per key, replaced by
 * temp file + fsync + rename + fsync of the directory, under a per-key lock
 * (see `key-lock.ts`) that makes the version check and the rename one atomic
 * step across processes. Reads take no lock: `rename` swaps whole files.
 *
 * Everything inside the lock is synchronous node:fs calls: an async call
 * costs more than the syscall here, and it keeps every critical section
 * inside one turn of the event loop. The price is that a write blocks the
 * event loop for its fsyncs (about 0.4 ms on a local SSD).
 */
export function createFsRecordStore(root: string, options: ResolvedFsOptions): RecordStore {
  const layout = layoutOf(root, options.namespace)
  const { recordsDir, locksDir, namespaceDir } = layout
  /** Hashed file name to key, learnt while listing; names never change keys. */
  const hashedKeys = new Map<string, string>()
  /** The records directory's sorted names, reused between pages while provably current. */
  const listings = new NameListingCache()
  let ready = false
  let closed = false
  /** The records directory, kept open for its fsync after every write. */
  let recordsDirFd: number | undefined

  /**
   * fsyncs the records directory through a descriptor kept open (an open and
   * a close less per write). The descriptor follows the directory, not the
   * path: if another instance's `destroy` removed the directory and it was
   * recreated, the rename just landed in the new one. Directories here are
   * only ever removed, never moved, so a descriptor whose directory still has
   * links is the directory at that path; a removed one has none, and then
   * the path is opened afresh.
   */
  function fsyncRecordsDir(): void {
    if (recordsDirFd !== undefined && fstatSync(recordsDirFd).nlink === 0) {
      closeRecordsDir()
    }
    recordsDirFd ??= openSync(recordsDir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
    fsyncSync(recordsDirFd)
  }

  function closeRecordsDir(): void {
    if (recordsDirFd === undefined) return
    const fd = recordsDirFd
    recordsDirFd = undefined
    try {
      closeSync(fd)
    } catch {
      // Nothing to do: the descriptor is gone either way.
    }
  }

  function ensureReady(): void {
    if (ready) return
    try {
      const firstCreated = mkdirSync(root, { recursive: true, mode: 0o700 })
      const created = [namespaceDir, recordsDir, locksDir].map(ensureRealDir)
      if (options.fsync && firstCreated !== undefined) {
        // Make the new directories' entries durable, up to the first existing parent.
        for (let dir = root; dir !== dirname(firstCreated); dir = dirname(dir))
          fsyncDir(dirname(dir))
      }
      if (options.fsync && created.some(Boolean)) {
        fsyncDir(root)
        fsyncDir(namespaceDir)
      }
      sweepTemps(readdirSync(recordsDir))
    } catch (error) {
      throw fsError(error, 'open its directory', { path: namespaceDir })
    }
    ready = true
  }

  /** Removes temp files left by dead processes (or, unidentifiable, old ones). */
  function sweepTemps(names: readonly string[]): void {
    const now = Date.now()
    for (const name of names) {
      if (!name.startsWith(TEMP_PREFIX)) continue
      const owner = parseIdentity(
        name.slice(TEMP_PREFIX.length).split('.').slice(0, IDENTITY_FIELDS).join('.'),
      )
      const path = join(recordsDir, name)
      try {
        if (
          owner !== undefined
            ? !ownerAlive(owner)
            : now - lstatSync(path).mtimeMs > options.staleTempMs
        ) {
          unlinkSync(path)
        }
      } catch {
        // Gone already, or removed by another process.
      }
    }
  }

  /** The key stored in a hashed-name record file (cached: a name never changes keys). */
  function keyOfHashed(name: string): string | undefined {
    const known = hashedKeys.get(name)
    if (known !== undefined) return known
    let file: ReturnType<typeof readRecordFile>
    try {
      file = readRecordFile(join(recordsDir, name), undefined)
    } catch (error) {
      throw fsError(error, 'read a record', { file: name })
    }
    if (file === null) return undefined
    if (fileNameOf(file.key) !== name) {
      throw new AgentStateError('CORRUPT', `Record file ${name} holds a key of another name`, {
        context: { file: name },
      })
    }
    hashedKeys.set(name, file.key)
    return file.key
  }

  /**
   * The records directory's names in listing order: the cached listing when
   * the directory provably did not change since it was read (see
   * `record-name-index.ts`), otherwise a fresh `readdir`.
   */
  function currentNames(): NameListing {
    // The clock is read before the stat and the readdir: see NameListingCache.store.
    const readStartNs = BigInt(Date.now()) * 1_000_000n
    let names: string[]
    let listing: NameListing
    try {
      const stat = lstatSync(recordsDir, { bigint: true, throwIfNoEntry: false })
      if (stat === undefined) {
        // Destroyed by another instance: an empty namespace until a write recreates it.
        listings.clear()
        return { entries: [], temps: false }
      }
      if (!stat.isDirectory()) throw notADirectory(recordsDir)
      const stamp = stampOf(stat)
      const cached = options.listCache ? listings.lookup(stamp) : undefined
      if (cached !== undefined) return cached
      names = readdirSync(recordsDir)
      listing = sortNames(names, keyOfHashed, listings.last())
      if (options.listCache) listings.store(listing, stamp, readStartNs)
    } catch (error) {
      if (errnoOf(error) === 'ENOENT') {
        listings.clear()
        return { entries: [], temps: false }
      }
      throw fsError(error, 'list records', { path: recordsDir })
    }
    if (listing.temps) sweepTemps(names)
    return listing
  }

  function writeOnce(key: string, data: Uint8Array, condition: RecordCondition): WriteAttempt {
    const name = fileNameOf(key)
    const path = join(recordsDir, name)
    let lock: ReturnType<typeof tryLockSync>
    try {
      lock = tryLockSync(locksDir, name, recordsDir)
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT') throw fsError(error, 'take a lock', { key })
      // The namespace was destroyed by another instance: recreate it, then retry.
      ready = false
      ensureReady()
      return { busy: true }
    }
    if (!lock.held)
      return lock.holder === undefined ? { busy: true } : { busy: true, holder: lock.holder.pid }
    let landed = false
    let temp: string | undefined
    try {
      const current = readRecordVersion(path, key)
      const holds = 'absent' in condition ? current === null : current === condition.version
      if (!holds) {
        throw new AgentStateError(
          'PRECONDITION_FAILED',
          `Record of ${JSON.stringify(key)} changed`,
          {
            context: { key },
          },
        )
      }
      const version = `${VERSION_PREFIX}${(versionCounter++).toString(36)}`
      const bytes = encodeRecordFile(key, version, data)
      temp = join(
        recordsDir,
        `${TEMP_PREFIX}${formatIdentity(ownIdentity)}.${randomBytes(6).toString('hex')}`,
      )
      const fd = openSync(temp, CREATE_FLAGS, 0o600)
      try {
        let written = 0
        while (written < bytes.byteLength) written += writeSync(fd, bytes, written)
        if (options.fsync) fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(temp, path)
      landed = true
      if (options.fsync) fsyncRecordsDir()
      return { version }
    } catch (error) {
      if (temp !== undefined && !landed) {
        try {
          unlinkSync(temp)
        } catch {
          // Never created, or swept later as a temp of this process.
        }
      }
      throw fsError(error, 'write a record', { key }, landed)
    } finally {
      try {
        unlockSync(locksDir, name, lock.generation)
      } catch {
        // The generation stays "held" by this live thread: other processes wait
        // (up to lockTimeoutMs), and this thread breaks it on its next try.
      }
    }
  }

  return {
    name: 'fs',
    capabilities: {
      durable: options.fsync,
      multiProcess: true,
      multiHost: false,
      maxKeyBytes: 1024,
      maxValueBytes: options.maxValueBytes,
    },

    async read(key: string): Promise<VersionedRecord | null> {
      ensureReady()
      const path = join(recordsDir, fileNameOf(key))
      try {
        const file = readRecordFile(path, key)
        return file === null ? null : { data: file.data, version: file.version }
      } catch (error) {
        throw fsError(error, 'read a record', { key })
      }
    },

    async write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string> {
      ensureReady()
      const deadline = performance.now() + options.lockTimeoutMs
      let pause = 1
      for (;;) {
        const attempt = writeOnce(key, data, condition)
        if ('version' in attempt) return attempt.version
        if (closed) throw new AgentStateError('CLOSED', 'Backend fs is closed')
        if (performance.now() >= deadline) {
          throw new AgentStateError(
            'UNAVAILABLE',
            `The lock of key ${JSON.stringify(key)} stayed held by another live process for ${options.lockTimeoutMs} ms`,
            { context: { key, holderPid: attempt.holder ?? null } },
          )
        }
        await sleep(pause * (0.5 + Math.random()))
        pause = Math.min(pause * 2, options.lockPollMs)
      }
    },

    async scan(
      scan: RecordScanOptions,
    ): Promise<{ records: readonly ScannedRecord[]; done: boolean }> {
      ensureReady()
      const names = currentNames()
      const selection = selectRecords(names.entries, scan)
      const records: ScannedRecord[] = []
      for (const { key, name } of selection.picked) {
        try {
          const file = readRecordFile(join(recordsDir, name), key)
          if (file !== null) records.push({ key, data: file.data })
        } catch (error) {
          throw fsError(error, 'read a record', { key })
        }
      }
      return { records, done: selection.done }
    },

    async destroy(): Promise<void> {
      try {
        if (lstatSync(namespaceDir, { throwIfNoEntry: false }) !== undefined) {
          rmSync(namespaceDir, { recursive: true, force: true })
          if (options.fsync) fsyncDir(root)
        }
      } catch (error) {
        throw fsError(error, 'remove its namespace', { path: namespaceDir })
      }
      hashedKeys.clear()
      listings.clear()
      closeRecordsDir()
      ready = false
    },

    async close(): Promise<void> {
      closed = true
      closeRecordsDir()
    },
  }
}
