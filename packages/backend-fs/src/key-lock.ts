import { randomBytes } from 'node:crypto'
import { lstatSync, readlinkSync, renameSync, symlinkSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { errnoOf } from './fs-errors.js'
import { TEMP_PREFIX } from './key-paths.js'
import {
  formatIdentity,
  ownerAlive,
  ownIdentity,
  type ProcessIdentity,
  parseIdentity,
} from './process-identity.js'

/**
 * A per-key lock that is safe across processes and against holder death,
 * built only on exclusive creation (no flock, no time-based breaking).
 *
 * The lock of a key is a run of numbered "generations" `<name>.1`,
 * `<name>.2`, ... in the locks directory, each a symlink created with
 * `symlink()` (atomic and exclusive: it fails with `EEXIST`) whose target is
 * its holder: `held.<pid>.<start>.<boot>.<thread>`. The highest generation
 * `g` decides: none, or a holder that is dead (checked through the start time
 * in `/proc/<pid>/stat`), means the lock is free, and the taker creates
 * `g + 1`. Release removes the holder's own generation.
 *
 * Why that is a compare-and-set: a generation is only ever removed by its
 * live holder while it is the highest, so the generations are always
 * `1..g` without gaps, and a dead holder's generation stays forever. Creating
 * `g + 1` therefore succeeds only while `g` (judged free) is still the
 * highest. A crash and reboot could lose a generation whose successors
 * survived (all of them dead by then): a taker that finds `g + 2` after
 * creating `g + 1` voids its generation and looks further. Breaking a dead holder's lock is the same exclusive creation, so
 * two processes can never both break it. Each crash while holding leaves one
 * symlink behind for that key (a few bytes; removed by `destroy`).
 *
 * A symlink's target is never followed: it is only read with `readlink()`.
 */

const HELD = 'held.'
/** Content of a generation that fills a gap: held by nobody. */
const VOID = 'void'
/** How many lost creation races one attempt tolerates before reporting the lock busy. */
const MAX_SPINS = 64

/** The outcome of {@link tryLockSync}: the generation now held, or who holds it. */
export type LockAttempt =
  | { readonly held: true; readonly generation: number }
  | { readonly held: false; readonly holder: ProcessIdentity | undefined }

function generationPath(locksDir: string, name: string, generation: number): string {
  return join(locksDir, `${name}.${generation}`)
}

/** Whether anything (a symlink or something planted) is at `path`; no exception when absent. */
function exists(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined
}

/**
 * The target of the generation at `path`: `undefined` when absent, `''` when
 * something other than a symlink was planted there (held by nobody). Looks
 * with `lstat` first, so the usual miss costs no thrown error.
 */
function generationTarget(path: string): string | undefined {
  const stat = lstatSync(path, { throwIfNoEntry: false })
  if (stat === undefined) return undefined
  if (!stat.isSymbolicLink()) return ''
  try {
    return readlinkSync(path)
  } catch (error) {
    if (errnoOf(error) === 'ENOENT') return undefined // released in between
    if (errnoOf(error) === 'EINVAL') return '' // replaced by a non-symlink in between
    throw error
  }
}

/** Atomically turns a generation this thread created into one nobody holds. */
function voidGeneration(path: string, tempDir: string): void {
  const temp = join(
    tempDir,
    `${TEMP_PREFIX}${formatIdentity(ownIdentity)}.${randomBytes(6).toString('hex')}`,
  )
  symlinkSync(VOID, temp)
  renameSync(temp, path)
}

/**
 * Tries once (without waiting) to take the lock of the record `name` in
 * `locksDir`; `tempDir` (same filesystem) holds the short-lived temp symlink
 * used to fill a gap. Synchronous by design: callers hold the lock only inside a
 * synchronous section, which is what lets `ownerAlive` treat the calling
 * thread's own leftover generations as abandoned.
 */
export function tryLockSync(locksDir: string, name: string, tempDir: string): LockAttempt {
  let holder: ProcessIdentity | undefined
  for (let spin = 0; spin < MAX_SPINS; spin++) {
    let top = 0
    let target: string | undefined
    for (;;) {
      const next = generationTarget(generationPath(locksDir, name, top + 1))
      if (next === undefined) break
      target = next
      top++
    }
    if (target !== undefined) {
      // A malformed generation can only come from outside tampering; treating it
      // as abandoned keeps the key usable.
      const owner = target.startsWith(HELD) ? parseIdentity(target.slice(HELD.length)) : undefined
      if (owner !== undefined && ownerAlive(owner)) return { held: false, holder: owner }
      holder = owner
    }
    const mine = generationPath(locksDir, name, top + 1)
    try {
      symlinkSync(`${HELD}${formatIdentity(ownIdentity)}`, mine)
    } catch (error) {
      if (errnoOf(error) === 'EEXIST') continue // another process took this generation first
      throw error
    }
    if (exists(generationPath(locksDir, name, top + 2))) {
      // A gap: generations after it survived a crash that lost this one (or were
      // planted). Fill it with a void generation and look further.
      voidGeneration(mine, tempDir)
      continue
    }
    return { held: true, generation: top + 1 }
  }
  return { held: false, holder }
}

/** Releases a generation taken by {@link tryLockSync}. */
export function unlockSync(locksDir: string, name: string, generation: number): void {
  unlinkSync(generationPath(locksDir, name, generation))
}
