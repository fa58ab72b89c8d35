import { createHash } from 'node:crypto'
import { lstatSync, readlinkSync, rmdirSync, symlinkSync, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { RecordCondition } from '@agent-state/core'
import { errnoOf } from './errors.js'
import { TEMP_PREFIX } from './key-layout.js'
import {
  IDENTITY_FIELDS,
  ownerAlive,
  type ProcessIdentity,
  parseIdentity,
} from './process-identity.js'

/**
 * Commit slots: what makes "check the record's version, then rename the new
 * record file over it" one atomic step across processes, with no lock a
 * frozen process can keep.
 *
 * A write first creates its complete new record file as a temp file `T` in
 * `records/` (written, fsynced, closed). Only then does it take the commit
 * slot of the state it expects to replace: it creates, with `symlink()`
 * (atomic and exclusive: `EEXIST` if the name exists), the symlink
 * `locks/<record name>@<expected version>.<n>` whose target is `T`'s name.
 * Holding the slot, it reads the record's version, compares it, and commits
 * with `rename(T, record)`.
 *
 * The rules for a slot `s.n` that exists with target `T_n`:
 * - `T_n` absent: the holder is finished (it committed, gave up, or was
 *   broken) and can never commit through `s.n` again; the next writer tries
 *   `s.(n+1)`.
 * - `T_n` present: the holder may still commit; writers wait. A waiter breaks
 *   the slot by unlinking `T_n` when the holder is dead (judged through
 *   `/proc`, as for temp files), or when it has seen the same slot held by the
 *   same `T_n` for `lockBreakMs` on its own monotonic clock (a holder that is
 *   stopped, frozen or stuck); then it tries `s.(n+1)`.
 *
 * Why breaking is safe. A holder's only step that changes the store is
 * `rename(T, record)`, and it never creates `T` again (its name is random and
 * made before the slot). `rename()` and `unlink()` of the same name are each
 * atomic, so exactly one of "the holder's rename" and "the breaker's unlink"
 * takes `T`: if the unlink wins, the holder's rename fails with `ENOENT`
 * whenever it wakes, right after the break or hours later, and it reports the
 * write as lost (core then re-reads: a fenced write finds the new lease and
 * fails with `LEASE_LOST`). If the rename won, the write had committed before
 * the break, under a version check done while it was the only possible
 * committer. So a broken holder can never commit afterwards, whatever point
 * of its write it was frozen at. (`rename()` replacement alone would not do:
 * a breaker that removed or replaced a lock file cannot stop a frozen holder
 * that already checked the version from renaming over a newer record when
 * it wakes. Here the rename itself needs the holder's temp file, and the
 * breaker takes that away.)
 *
 * Why at most one writer can commit over a given state. `s.(n+1)` is only
 * ever created after `T_n` was seen absent (or unlinked), and a missing `T`
 * never comes back, so of the whole chain `s.1 .. s.n` at most the holder of
 * the highest slot still has its temp file; everyone below can no longer
 * rename. Two writers racing for the same free slot number are decided by
 * the exclusive `symlink()`.
 *
 * Why slots can be removed, and by whom. A chain only protects the state it
 * names while that state is the record's current one. Versions are never
 * reused, so once a writer has seen the record at another state under its
 * slot (its check failed) or has itself committed over it, that state can
 * never be current again and its whole chain protects nothing: that writer
 * removes `s.1 .. s.n`. A broken writer removes nothing (the state may still
 * be current, its breaker committing on `s.(n+1)`). So slots are left behind
 * only by writers that died or were broken before anyone finished the chain;
 * `destroy()` removes them.
 *
 * "No record" is the one state that comes back (a removal, `destroy()`, a
 * file moved away by hand), so it has no chain: a create commits with
 * `link()`, which fails if any record exists (`write-path.ts`). The `@~`
 * base of {@link slotBase} is only what earlier versions used for creates.
 *
 * A removal holds its slot with an empty temp directory instead of a temp
 * file and commits by moving the record into it; breaking it is `rmdir`,
 * which fails once the record is inside (see `breakSlot`).
 *
 * A slot's target is never followed: it is only read with `readlink()`, and a
 * target that is not a temp file name of this package marks the slot as held
 * by nobody (outside tampering must not wedge a key).
 */

/**
 * Temp names of this thread's writes that hold a commit slot across an
 * `await` (a write that commits on the thread pool while other writes of the
 * process run). Slots of the calling thread otherwise count as abandoned
 * (`ownerAlive`: a synchronous section cannot be running while the thread
 * looks); these are still being committed and are waited for like another
 * live writer's.
 */
export const slotsHeldAcrossAwait = new Set<string>()

/** The outcome of {@link takeSlot}: the slot number now held, or who holds the slot. */
export type SlotAttempt =
  | { readonly held: true; readonly slot: number }
  | { readonly held: false; readonly holder: ProcessIdentity | undefined }

/**
 * What a waiter saw of a held slot, kept across its tries of one write so it
 * can tell a holder that makes no progress. Mutable; one per write call.
 */
export interface SlotWatch {
  path: string | undefined
  target: string | undefined
  since: number
}

/** A fresh {@link SlotWatch}. */
export function newSlotWatch(): SlotWatch {
  return { path: undefined, target: undefined, since: 0 }
}

/** How many lost creation races or finished slots one try walks before reporting the slot busy. */
const MAX_SPINS = 64
const PLAIN_VERSION = /^[A-Za-z0-9_-]{1,100}$/
const TEMP_NAME = new RegExp(
  `^${TEMP_PREFIX.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}([^/]+)\\.[0-9a-f]{12}$`,
)

/**
 * The name shared by the slots of `condition` for the record `name`: the
 * version itself when it is file-name safe (always, for versions this package
 * writes), its hash otherwise; `~` for "no record" (never a version).
 */
export function slotBase(name: string, condition: RecordCondition): string {
  if ('absent' in condition) return `${name}@~`
  const { version } = condition
  if (PLAIN_VERSION.test(version)) return `${name}@${version}`
  return `${name}@~h${createHash('sha256').update(version, 'latin1').digest('hex').slice(0, 40)}`
}

/** The owner encoded in a temp file name of this package; `undefined` when it is not one. */
export function ownerOfTemp(name: string): ProcessIdentity | undefined {
  const match = TEMP_NAME.exec(name)
  if (match === null) return undefined
  const identity = match[1] as string
  if (identity.split('.').length !== IDENTITY_FIELDS) return undefined
  return parseIdentity(identity)
}

/** A slot's target: `undefined` when the slot is gone, `''` when it is not a symlink. */
function slotTarget(path: string): string | undefined {
  try {
    return readlinkSync(path)
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'ENOENT') return undefined
    if (code === 'EINVAL') return '' // planted: not a symlink
    throw error
  }
}

function exists(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined
}

/**
 * Breaks a slot: after this, its holder's `rename` of `tempPath` can only
 * fail. A removal holds its slot with an empty temp directory and commits by
 * moving the record into it: `rmdir` takes the directory away only while it
 * is empty, so either the breaker's `rmdir` or the holder's move wins, never
 * both (`ENOTEMPTY`: the holder had committed; the next slot's check sees it).
 */
function breakSlot(tempPath: string): void {
  try {
    unlinkSync(tempPath)
  } catch (error) {
    const code = errnoOf(error)
    if (code === 'ENOENT') return // already finished, or broken by another waiter
    if (code !== 'EISDIR' && code !== 'EPERM') throw error
    try {
      rmdirSync(tempPath)
    } catch (inner) {
      const innerCode = errnoOf(inner)
      if (innerCode !== 'ENOENT' && innerCode !== 'ENOTEMPTY' && innerCode !== 'EEXIST') throw inner
    }
  }
}

/** What a walker found at an existing slot. */
type Judged =
  | { readonly kind: 'gone' } // removed in between: try the same number again
  | { readonly kind: 'finished' } // held by nobody, finished or just broken: try the next number
  | { readonly kind: 'busy'; readonly holder: ProcessIdentity }
  | { readonly kind: 'breakable'; readonly holder: ProcessIdentity; readonly tempPath: string }

/** Judges the existing slot at `path` (see the rules above); updates `watch`. */
function judge(path: string, recordsDir: string, watch: SlotWatch, breakMs: number): Judged {
  const target = slotTarget(path)
  if (target === undefined) return { kind: 'gone' }
  const owner = ownerOfTemp(target)
  const tempPath = join(recordsDir, target)
  if (owner === undefined || !exists(tempPath)) return { kind: 'finished' }
  if (ownerAlive(owner) || slotsHeldAcrossAwait.has(target)) {
    const now = performance.now()
    if (watch.path !== path || watch.target !== target) {
      watch.path = path
      watch.target = target
      watch.since = now
    }
    if (now - watch.since < breakMs) return { kind: 'busy', holder: owner }
  }
  return { kind: 'breakable', holder: owner, tempPath }
}

/**
 * Tries once, without waiting, to take a slot of the chain `base` in
 * `locksDir` for the temp file `tempName` of `recordsDir`, breaking what may
 * be broken. Synchronous. A slot of the calling thread counts as abandoned
 * (`ownerAlive`) unless its temp file is in {@link slotsHeldAcrossAwait}:
 * every other slot of this thread was taken in a synchronous section that
 * has ended.
 */
export function takeSlot(
  locksDir: string,
  recordsDir: string,
  base: string,
  tempName: string,
  watch: SlotWatch,
  breakMs: number,
): SlotAttempt {
  let slot = 1
  let holder: ProcessIdentity | undefined
  for (let spin = 0; spin < MAX_SPINS; spin++) {
    const path = join(locksDir, `${base}.${slot}`)
    try {
      symlinkSync(tempName, path)
      return { held: true, slot }
    } catch (error) {
      if (errnoOf(error) !== 'EEXIST') throw error
    }
    const judged = judge(path, recordsDir, watch, breakMs)
    if (judged.kind === 'gone') continue
    if (judged.kind === 'busy') return { held: false, holder: judged.holder }
    if (judged.kind === 'breakable') {
      holder = judged.holder
      breakSlot(judged.tempPath)
    }
    slot++
  }
  return { held: false, holder }
}

/**
 * Whether the chain `base` is busy with a holder that may not be broken yet,
 * looking only (nothing created or broken): lets a write that found the slot
 * busy wait without writing and fsyncing a new temp file for every try.
 */
export function slotBusy(
  locksDir: string,
  recordsDir: string,
  base: string,
  watch: SlotWatch,
  breakMs: number,
): ProcessIdentity | undefined {
  let slot = 1
  for (let spin = 0; spin < MAX_SPINS; spin++) {
    const path = join(locksDir, `${base}.${slot}`)
    if (!exists(path)) return undefined
    const judged = judge(path, recordsDir, watch, breakMs)
    if (judged.kind === 'busy') return judged.holder
    if (judged.kind === 'breakable') return undefined
    if (judged.kind === 'finished') slot++
  }
  return undefined
}

/**
 * Removes the slots `1..upTo` of the chain `base`: only once the state they
 * name can never be current again (see the rules above).
 */
export function removeChain(locksDir: string, base: string, upTo: number): void {
  for (let slot = upTo; slot >= 1; slot--) {
    try {
      unlinkSync(join(locksDir, `${base}.${slot}`))
    } catch {
      // Already removed by another finisher of this chain, or never created.
    }
  }
}
