import { randomBytes } from 'node:crypto'
import {
  closeSync,
  constants,
  fsyncSync,
  openSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { AgentStateError, type RecordCondition } from '@agent-state/core'
import {
  newSlotWatch,
  removeChain,
  type SlotWatch,
  slotBase,
  slotBusy,
  takeSlot,
} from './commit-slot.js'
import { errnoOf, fsError } from './errors.js'
import { fileNameOf, TEMP_PREFIX } from './key-layout.js'
import type { NamespaceDirs } from './namespace-dirs.js'
import type { ResolvedFsOptions } from './options.js'
import { formatIdentity, ownIdentity } from './process-identity.js'
import { encodeRecordFile } from './record-file.js'
import { readRecordVersion } from './record-reading.js'

/**
 * The points of a write, in order, that {@link WriteHooks.onStep} reports:
 * the temp file is complete; the commit slot is held; the version check
 * passed; the rename landed; the directory is fsynced (the write is durable).
 */
export type WriteStep = 'temp-written' | 'slot-taken' | 'checked' | 'renamed' | 'synced'

/**
 * Test seam: lets a test stop a writer (`SIGSTOP`) at an exact point of its
 * write. Never needed in production.
 */
export interface WriteHooks {
  readonly onStep?: (step: WriteStep, key: string) => void
}

const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW
/** Process-unique prefix of record versions; a counter makes each write's version new. */
const VERSION_PREFIX = randomBytes(8).toString('base64url')
let versionCounter = 0
const TEMP_OWNER = `${TEMP_PREFIX}${formatIdentity(ownIdentity)}.`

/** Outcome of one try of a write. */
type WriteAttempt = { readonly version: string } | { readonly busy: true; readonly holder?: number }
const BUSY: WriteAttempt = { busy: true }

function changed(key: string): AgentStateError {
  return new AgentStateError('PRECONDITION_FAILED', `Record of ${JSON.stringify(key)} changed`, {
    context: { key },
  })
}

/** The write path of one store instance: temp file, commit slot, check, rename, fsync. */
export interface WritePath {
  /** Writes `data` as the record of `key` if `condition` holds; resolves the new version. */
  write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string>
}

/**
 * Builds the write path. See `commit-slot.ts` for why the check and the
 * rename are one atomic step across processes and why a writer frozen at any
 * point of its write can be broken safely.
 *
 * Each try is one synchronous section (node:fs sync calls): an async call
 * costs more than the syscall here, and a slot is then never held across an
 * `await`. The price is that a write blocks the event loop for its two
 * fsyncs (about 0.4 ms on a local SSD). Waiting for a busy slot does yield.
 */
export function createWritePath(
  dirs: NamespaceDirs,
  options: ResolvedFsOptions,
  isClosed: () => boolean,
  hooks: WriteHooks = {},
): WritePath {
  const { recordsDir, locksDir } = dirs.layout
  const onStep = hooks.onStep

  function tryOnce(
    key: string,
    data: Uint8Array,
    condition: RecordCondition,
    watch: SlotWatch,
  ): WriteAttempt {
    const name = fileNameOf(key)
    const path = join(recordsDir, name)
    const version = `${VERSION_PREFIX}${(versionCounter++).toString(36)}`
    const bytes = encodeRecordFile(key, version, data)
    const tempName = `${TEMP_OWNER}${randomBytes(6).toString('hex')}`
    const temp = join(recordsDir, tempName)
    let fd: number
    try {
      fd = openSync(temp, CREATE_FLAGS, 0o600)
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT') throw fsError(error, 'write a record', { key })
      // The namespace was destroyed by another instance: recreate it, then retry.
      dirs.invalidate()
      dirs.ensureReady()
      return BUSY
    }
    /** Whether `temp` is gone: renamed into place, or unlinked by a breaker. */
    let tempGone = false
    try {
      try {
        let written = 0
        while (written < bytes.byteLength) written += writeSync(fd, bytes, written)
        if (options.fsync) fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      onStep?.('temp-written', key)
      const base = slotBase(name, condition)
      let attempt: ReturnType<typeof takeSlot>
      try {
        attempt = takeSlot(locksDir, recordsDir, base, tempName, watch, options.lockBreakMs)
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT') throw error
        dirs.invalidate() // locks/ was removed by another instance's destroy
        dirs.ensureReady()
        return BUSY
      }
      if (!attempt.held) {
        return attempt.holder === undefined ? BUSY : { busy: true, holder: attempt.holder.pid }
      }
      onStep?.('slot-taken', key)
      const current = readRecordVersion(path, key)
      if ('absent' in condition ? current !== null : current !== condition.version) {
        // The state this chain guards is gone for good: nobody needs its slots.
        removeChain(locksDir, base, attempt.slot)
        throw changed(key)
      }
      onStep?.('checked', key)
      try {
        renameSync(temp, path)
      } catch (error) {
        if (errnoOf(error) !== 'ENOENT') throw error
        // Broken while we held the slot (our temp file was unlinked): we never
        // committed, and the breaker may be committing now, so the slots stay.
        tempGone = true
        throw changed(key)
      }
      tempGone = true
      onStep?.('renamed', key)
      removeChain(locksDir, base, attempt.slot)
      try {
        if (options.fsync) dirs.fsyncRecordsDir()
      } catch (error) {
        throw fsError(error, 'write a record', { key }, true)
      }
      onStep?.('synced', key)
      return { version }
    } catch (error) {
      throw fsError(error, 'write a record', { key })
    } finally {
      // Not committed (busy, refused, failed): the temp file must not outlive this section.
      if (!tempGone) {
        try {
          unlinkSync(temp)
        } catch {
          // Unlinked by a breaker, or swept later as a temp of this process.
        }
      }
    }
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

  return {
    async write(key: string, data: Uint8Array, condition: RecordCondition): Promise<string> {
      dirs.ensureReady()
      const deadline = performance.now() + options.lockTimeoutMs
      const watch = newSlotWatch()
      let pause = 1
      let retry = false
      for (;;) {
        // A retry first looks whether the slot is still busy, so waiting costs no temp file and fsync.
        const busyHolder = retry ? stillBusy(key, condition, watch) : undefined
        const attempt: WriteAttempt =
          busyHolder === undefined
            ? tryOnce(key, data, condition, watch)
            : { busy: true, holder: busyHolder.pid }
        retry = true
        if ('version' in attempt) return attempt.version
        if (isClosed()) throw new AgentStateError('CLOSED', 'Backend fs is closed')
        if (performance.now() >= deadline) {
          throw new AgentStateError(
            'UNAVAILABLE',
            `The commit slot of key ${JSON.stringify(key)} stayed held by other live writers for ${options.lockTimeoutMs} ms`,
            { context: { key, holderPid: attempt.holder ?? null } },
          )
        }
        await sleep(pause * (0.5 + Math.random()))
        pause = Math.min(pause * 2, options.lockPollMs)
      }
    },
  }
}
