import {
  closeSync,
  constants,
  fsyncSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  unlinkSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { AgentStateError } from '@agent-state/core'
import { errnoOf, fsError } from './errors.js'
import { TEMP_PREFIX } from './key-layout.js'
import { IDENTITY_FIELDS, ownerAlive, parseIdentity } from './process-identity.js'

/** Where a namespace lives on disk. */
export interface FsLayout {
  /** `<root>/<namespace>` */
  readonly namespaceDir: string
  /** `<root>/<namespace>/records`: one file per key, and the temp files of writes in progress. */
  readonly recordsDir: string
  /** `<root>/<namespace>/locks`: the commit slots of writes in progress (see `commit-slot.ts`). */
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

function fsyncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW)
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** The error for a store directory that something other than a real directory replaced. */
export function notADirectory(path: string): AgentStateError {
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
 * Temp names of this process's writes between their temp file and their
 * commit. They are the only temps of this thread that can be in use while it
 * sweeps (a write may await its temp file's fsync on the thread pool), so the
 * sweep leaves them alone; every other temp of this thread is a leftover.
 */
export const ownTemps = new Set<string>()

/** Removes a temp: a file, or the temp directory of a removal (with the record moved into it). */
function removeTemp(path: string): void {
  if (lstatSync(path).isDirectory()) rmSync(path, { recursive: true, force: true })
  else unlinkSync(path)
}

/** The lifecycle of one instance's namespace directories. */
export interface NamespaceDirs {
  readonly layout: FsLayout
  /** Creates the directories on first use (and after another instance's `destroy`); sweeps temps. */
  ensureReady(): void
  /** Forgets that the directories exist, so the next `ensureReady` checks and recreates them. */
  invalidate(): void
  /** Removes temp files left by dead processes (or, unidentifiable, old ones) among `names`. */
  sweepTemps(names: readonly string[]): void
  /** Removes the whole namespace. */
  destroy(): void
}

/** The directory lifecycle of `namespace` under the absolute `root`. */
export function namespaceDirs(
  root: string,
  namespace: string,
  options: { readonly fsync: boolean; readonly staleTempMs: number },
): NamespaceDirs {
  const layout = layoutOf(root, namespace)
  const { namespaceDir, recordsDir, locksDir } = layout
  let ready = false

  function sweepTemps(names: readonly string[]): void {
    const now = Date.now()
    for (const name of names) {
      if (!name.startsWith(TEMP_PREFIX) || ownTemps.has(name)) continue
      const owner = parseIdentity(
        name.slice(TEMP_PREFIX.length).split('.').slice(0, IDENTITY_FIELDS).join('.'),
      )
      const path = join(recordsDir, name)
      try {
        // Removing a temp file is always safe, even one named by a commit slot:
        // a writer whose temp file is gone can no longer commit (see commit-slot.ts).
        if (
          owner !== undefined
            ? !ownerAlive(owner)
            : now - lstatSync(path).mtimeMs > options.staleTempMs
        ) {
          removeTemp(path)
        }
      } catch {
        // Gone already, or removed by another process.
      }
    }
  }

  return {
    layout,
    ensureReady(): void {
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
        throw fsError(
          error,
          { operation: 'open its directory', mayHaveApplied: false },
          { path: namespaceDir },
        )
      }
      ready = true
    },
    invalidate(): void {
      ready = false
    },
    sweepTemps,
    destroy(): void {
      try {
        if (lstatSync(namespaceDir, { throwIfNoEntry: false }) !== undefined) {
          rmSync(namespaceDir, { recursive: true, force: true })
          if (options.fsync) fsyncDir(root)
        }
      } catch (error) {
        throw fsError(
          error,
          { operation: 'remove its namespace', mayHaveApplied: false },
          { path: namespaceDir },
        )
      }
      ready = false
    },
  }
}
