import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, renameSync, rmdirSync, unlink, unlinkSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import {
  AgentStateError,
  backendFailure,
  isAgentStateError,
  quoteForMessage,
  type RecordCondition,
} from '@agent-state/core'
import { newSlotWatch, type SlotWatch, slotBase, slotBusy } from './commit-slot.js'
import { BUSY, callback, createCommitSteps, type WriteAttempt } from './commit-steps.js'
import { createDirSync, fsyncAfterRename } from './dir-sync.js'
import { errnoOf, fsError } from './errors.js'
import { fileNameOf, pathIn, TEMP_PREFIX } from './key-layout.js'
import { type NamespaceDirs, ownTemps } from './namespace-dirs.js'
import type { ResolvedFsOptions } from './options.js'
import { formatIdentity, ownIdentity } from './process-identity.js'
import { encodeRecordFile } from './record-file.js'
import { writeTempAsync, writeTempSync } from './temp-file.js'

/**
 * The points of a write, in order, that {@link WriteHooks.onStep} reports:
 * the temp file is complete; the commit slot is held; the version check
 * passed; the rename landed; the directory is fsynced (the write is durable).
 * A create (no record expected) takes no slot and reports no `slot-taken` or
 * `checked`: its `link` is the check. A removal's "temp file" is its empty
 * temp directory.
 */
export type WriteStep = 'temp-written' | 'slot-taken' | 'checked' | 'renamed' | 'synced'

/**
 * Every {@link WriteStep}, in order: the steps the contract suite's
 * frozen-writer tier stops a holder at, in the package's own suite and in
 * `agent-state verify`.
 */
export const FS_WRITE_STEPS: readonly WriteStep[] = [
  'temp-written',
  'slot-taken',
  'checked',
  'renamed',
  'synced',
]

/**
 * Test seam: lets a test stop a writer (`SIGSTOP`) at an exact point of its
 * write (the contract suite's frozen-writer tier, through
 * `createFsBackendWithHooks`). Never needed in production.
 */
export interface WriteHooks {
  readonly onStep?: (step: WriteStep, key: string) => void
}

/** Process-unique prefix of record versions; a counter makes each write's version new. */
const VERSION_PREFIX = randomBytes(8).toString('base64url')
let versionCounter = 0
const TEMP_OWNER = `${TEMP_PREFIX}${formatIdentity(ownIdentity)}.`

/**
 * Hex of pooled CSPRNG bytes for the random part of temp names (6 bytes, 12
 * characters each): one `randomBytes(6)` per write cost a system call
 * (OpenSSL's fork check, `getpid`) and a `Buffer#toString` each.
 */
let tempPool = ''
let tempPoolOffset = 0

/** A new temp name of this thread: its owner and 48 random bits (created with `O_EXCL`, as before). */
function newTempName(): string {
  if (tempPoolOffset + 12 > tempPool.length) {
    tempPool = randomBytes(4092).toString('hex')
    tempPoolOffset = 0
  }
  const random = tempPool.slice(tempPoolOffset, tempPoolOffset + 12)
  tempPoolOffset += 12
  return `${TEMP_OWNER}${random}`
}

const DONE: WriteAttempt = { version: '' }

/** The write path of one store instance: temp file, commit slot, check, rename, fsync. */
export interface WritePath {
  /** Writes `data` as the record of `key` if `condition` holds; resolves the new version. */
  write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string>
  /** Removes the record of `key` if it is still at `condition.version`. */
  remove(key: string, condition: { readonly version: string }): Promise<void>
  /** Removes this instance's (empty) removal directory. */
  close(): void
}

/**
 * Builds the write path. See `commit-slot.ts` for why the check and the
 * rename are one atomic step across processes and why a writer frozen at any
 * point of its write can be broken safely.
 *
 * A try has three phases. (1) The complete temp file is written and fsynced:
 * synchronously when this instance has no other write in flight (cheapest
 * alone), on the thread pool otherwise, so concurrent writes' file fsyncs
 * overlap. No slot is held yet. (2) The commit (`commit-steps.ts`): take
 * the slot, check, rename. A lone write does it in one synchronous section;
 * one that overlaps others of this instance runs the slot's `symlink` and the
 * `rename` on the thread pool, holding the slot across those awaits, so a
 * filesystem journal wait no longer stalls the event loop (removals always
 * commit synchronously: their temp directory is shared). A create expects no
 * record and takes no slot: `link()` of the temp file fails if the record
 * exists, so it is the check and the commit in one call, and a create frozen
 * at any point can never overwrite anything. (3) The directory fsync, shared
 * by concurrent writes (`dir-sync.ts`), on the thread pool.
 */
export function createWritePath(
  dirs: NamespaceDirs,
  options: ResolvedFsOptions,
  isClosed: () => boolean,
  hooks: WriteHooks = {},
): WritePath {
  const { recordsDir, locksDir } = dirs.layout
  const onStep = hooks.onStep
  const dirSync = createDirSync(recordsDir)
  /** Writes of this instance between their start and their outcome. */
  let inFlight = 0

  /** Makes the landed change durable (phase 3); a failure here is `INDETERMINATE`. */
  async function durable(key: string): Promise<void> {
    if (!options.fsync) return
    try {
      // A lone write (no other write of this instance in flight after one
      // turn of the event loop, so none can join a batch) fsyncs
      // synchronously, like the raw client: the trip to the thread pool costs
      // it about eight system calls and two thread wake-ups. Otherwise
      // through the shared fsync: concurrent callers reach this point one
      // after another (each try's sync section runs whole), so only a fsync
      // on the thread pool lets the next ones' renames join a batch.
      await fsyncAfterRename(dirSync, () => inFlight)
    } catch (error) {
      throw fsError(error, { operation: 'write a record', mayHaveApplied: true }, { key })
    }
  }

  /** Recreates the namespace after another instance's `destroy` removed it. */
  function recreated(): WriteAttempt {
    dirs.invalidate()
    dirs.ensureReady()
    return BUSY
  }

  const steps = createCommitSteps(dirs.layout, options.lockBreakMs, recreated, onStep)

  async function tryWrite(
    key: string,
    data: Uint8Array,
    condition: RecordCondition,
    watch: SlotWatch,
  ): Promise<WriteAttempt> {
    const name = fileNameOf(key)
    const path = pathIn(recordsDir, name)
    const version = `${VERSION_PREFIX}${(versionCounter++).toString(36)}`
    const bytes = encodeRecordFile(key, version, data)
    const tempName = newTempName()
    const temp = pathIn(recordsDir, tempName)
    /** Whether `temp` may still exist and is ours to remove. */
    let tempOurs = true
    /** Removal of the temp's name or of the slot, started once committed; awaited before resolving. */
    let cleanup: Promise<void> | undefined
    ownTemps.add(tempName)
    try {
      try {
        if (inFlight > 1) await writeTempAsync(temp, bytes, options.fsync)
        else writeTempSync(temp, bytes, options.fsync)
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT')
          throw fsError(error, { operation: 'write a record', mayHaveApplied: false }, { key })
        return recreated() // the namespace was destroyed by another instance
      }
      onStep?.('temp-written', key)
      try {
        if ('absent' in condition) {
          if (inFlight > 1) {
            await steps.createAsync(key, temp, path)
            tempOurs = false
            // The temp name is a second link to the record now; dropping it overlaps the fsync.
            cleanup = callback<void>((done) => unlink(temp, () => done(null, undefined)))
          } else {
            steps.create(key, temp, path)
          }
          onStep?.('renamed', key)
        } else {
          const land = () => {
            renameSync(temp, path)
            tempOurs = false
          }
          if (inFlight > 1) {
            const outcome = await steps.replaceAsync(
              key,
              name,
              tempName,
              condition,
              watch,
              land,
              () => {
                tempOurs = false
              },
            )
            if (!('cleanup' in outcome)) return outcome
            cleanup = outcome.cleanup
          } else {
            const attempt = steps.replace(key, name, tempName, condition, watch, land)
            if (attempt !== undefined) return attempt
          }
        }
      } catch (error) {
        throw fsError(error, { operation: 'write a record', mayHaveApplied: false }, { key })
      }
    } finally {
      // Not committed (busy, refused, failed), or linked: the temp name must not outlive the try.
      if (tempOurs) {
        try {
          unlinkSync(temp)
        } catch {
          // Unlinked by a breaker, or swept later as a temp of this process.
        }
      }
      ownTemps.delete(tempName)
    }
    await durable(key)
    await cleanup
    onStep?.('synced', key)
    return { version }
  }

  /**
   * This instance's removal directory (a temp name in `records/`), reused by
   * its removals while it exists: a removal holds its slot with it and
   * commits by moving the record into it, then empties it. A breaker takes
   * it away with `rmdir`, which fails once a record is inside, so exactly one
   * of "the holder's move" and "the breaker's removal" wins, as with
   * `rename` and `unlink`. A removed one is never recreated under its name
   * (a frozen holder could otherwise move into the new one): the next removal
   * makes a fresh one. Reusing it saves a `mkdir` and an `rmdir` per delete.
   */
  let removalDir: string | undefined

  function dropRemovalDir(): void {
    if (removalDir === undefined) return
    const name = removalDir
    removalDir = undefined
    ownTemps.delete(name)
    try {
      rmdirSync(join(recordsDir, name))
    } catch {
      // Broken (removed) already, or not empty: swept once this process is gone.
    }
  }

  async function tryRemove(
    key: string,
    condition: { readonly version: string },
    watch: SlotWatch,
  ): Promise<WriteAttempt> {
    const name = fileNameOf(key)
    const path = join(recordsDir, name)
    if (removalDir === undefined) {
      const fresh = newTempName()
      try {
        mkdirSync(join(recordsDir, fresh), { mode: 0o700 })
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT')
          throw fsError(error, { operation: 'remove a record', mayHaveApplied: false }, { key })
        return recreated()
      }
      removalDir = fresh
      ownTemps.add(fresh)
    }
    const tempName = removalDir
    const removed = join(recordsDir, tempName, 'removed')
    let moved = false
    try {
      onStep?.('temp-written', key)
      const land = () => {
        renameSync(path, removed)
        moved = true
      }
      const attempt = steps.replace(key, name, tempName, condition, watch, land)
      if (attempt !== undefined) return attempt
    } catch (error) {
      // Not committed with a slot perhaps still naming the directory (refused
      // for damage, or broken): drop it, so no slot left behind looks held.
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) {
        dropRemovalDir()
      } else if (!moved && !existsSync(join(recordsDir, tempName))) {
        removalDir = undefined // broken while we held the slot
        ownTemps.delete(tempName)
      }
      throw fsError(error, { operation: 'remove a record', mayHaveApplied: false }, { key })
    } finally {
      if (moved) {
        try {
          unlinkSync(removed)
        } catch {
          // Left inside: a later move replaces it; swept with the directory.
        }
      }
    }
    await durable(key)
    onStep?.('synced', key)
    return DONE
  }

  /** The holder of the key's busy slot, if it may not be broken yet; any doubt goes to a real try. */
  function stillBusy(key: string, condition: RecordCondition, watch: SlotWatch) {
    try {
      const base = slotBase(fileNameOf(key), condition)
      return slotBusy(locksDir, recordsDir, base, watch, options.lockBreakMs)
    } catch {
      return undefined // the try reports the error properly
    }
  }

  /** Retries `attempt` while the key's slot is busy, up to `lockTimeoutMs`. */
  async function withRetries(
    key: string,
    condition: RecordCondition,
    attempt: (watch: SlotWatch) => Promise<WriteAttempt>,
  ): Promise<string> {
    dirs.ensureReady()
    inFlight++
    try {
      const deadline = performance.now() + options.lockTimeoutMs
      const watch = newSlotWatch()
      let pause = 1
      let retry = false
      for (;;) {
        // A retry first looks whether the slot is still busy, so waiting costs no temp file and fsync.
        const busyHolder = retry ? stillBusy(key, condition, watch) : undefined
        const outcome: WriteAttempt =
          busyHolder === undefined ? await attempt(watch) : { busy: true, holder: busyHolder.pid }
        retry = true
        if ('version' in outcome) return outcome.version
        if (isClosed()) throw new AgentStateError('CLOSED', 'Backend fs is closed')
        if (performance.now() >= deadline) {
          throw backendFailure({
            operation: 'write a record',
            mayHaveApplied: false,
            message: `The commit slot of key ${quoteForMessage(key)} stayed held by other live writers for ${options.lockTimeoutMs} ms`,
            context: { key, holderPid: outcome.holder ?? null },
          })
        }
        await sleep(pause * (0.5 + Math.random()))
        pause = Math.min(pause * 2, options.lockPollMs)
      }
    } finally {
      inFlight--
    }
  }

  return {
    write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string> {
      return withRetries(key, condition, (watch) => tryWrite(key, data, condition, watch))
    },
    async remove(key: string, condition: { readonly version: string }): Promise<void> {
      await withRetries(key, condition, (watch) => tryRemove(key, condition, watch))
    },
    close(): void {
      dropRemovalDir()
    },
  }
}
