import { link, linkSync, rename, symlink, unlink } from 'node:fs'
import { join } from 'node:path'
import { recordChanged } from '@agent-state/core'
import {
  removeChain,
  type SlotWatch,
  slotBase,
  slotsHeldAcrossAwait,
  takeSlot,
} from './commit-slot.js'
import { errnoOf } from './errors.js'
import type { FsLayout } from './namespace-dirs.js'
import { readRecordVersion } from './record-reading.js'

/**
 * Phase 2 of a write: the step that makes its complete temp file the record,
 * atomically with the check of the state it expects (see `commit-slot.ts`).
 * Each comes synchronously (one event-loop turn: cheapest for a lone write)
 * and on the thread pool (for a write that overlaps others of its instance).
 */

/** Outcome of one try of a write. */
export type WriteAttempt =
  | { readonly version: string }
  | { readonly busy: true; readonly holder?: number }

/** A try that found the slot busy, or the namespace gone (recreated): try again. */
export const BUSY: WriteAttempt = { busy: true }

/** A node:fs callback call as a promise. */
export function callback<T>(
  run: (done: (error: Error | null, value: T) => void) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    run((error, value) => (error === null ? resolve(value) : reject(error)))
  })
}

/** A replacement committed on the thread pool: the removal of its slot, started, to await before resolving. */
export interface PoolCommit {
  readonly cleanup: Promise<void>
}

/** The commit steps of one write path. */
export interface CommitSteps {
  /** A create: `link` the temp file into place, failing if any record exists. */
  create(key: string, temp: string, path: string): void
  /** {@link CommitSteps.create} on the thread pool. */
  createAsync(key: string, temp: string, path: string): Promise<void>
  /** A replacement: slot, check, `land()`. Returns the attempt, or `undefined` once landed. */
  replace(
    key: string,
    name: string,
    tempName: string,
    condition: { readonly version: string },
    watch: SlotWatch,
    land: () => void,
  ): WriteAttempt | undefined
  /** A write's replacement on the thread pool; `landed` is called once its rename landed. */
  replaceAsync(
    key: string,
    name: string,
    tempName: string,
    condition: { readonly version: string },
    watch: SlotWatch,
    land: () => void,
    landed: () => void,
  ): Promise<WriteAttempt | PoolCommit>
}

/**
 * The commit steps over `layout`. `recreated` recreates the namespace after
 * another instance's `destroy` removed `locks/` (and answers "try again");
 * `onStep` is the test seam of `write-path.ts`.
 */
export function createCommitSteps(
  layout: FsLayout,
  lockBreakMs: number,
  recreated: () => WriteAttempt,
  onStep: ((step: 'slot-taken' | 'checked' | 'renamed', key: string) => void) | undefined,
): CommitSteps {
  const { recordsDir, locksDir } = layout

  function linkFailed(key: string, error: unknown): never {
    const code = errnoOf(error)
    // EEXIST: there is a record (a value, a tombstone, a damaged file): core re-reads.
    // ENOENT: the temp file was swept, or the namespace removed: nothing landed.
    if (code === 'EEXIST' || code === 'ENOENT') throw recordChanged(key)
    throw error
  }

  /** The version check under the slot: the chain is removed when the state it guards is gone for good. */
  function check(key: string, path: string, version: string, base: string, slot: number): void {
    if (readRecordVersion(path, key) === version) return
    removeChain(locksDir, base, slot)
    throw recordChanged(key)
  }

  function replace(
    key: string,
    name: string,
    tempName: string,
    condition: { readonly version: string },
    watch: SlotWatch,
    land: () => void,
  ): WriteAttempt | undefined {
    const path = join(recordsDir, name)
    const base = slotBase(name, condition)
    let attempt: ReturnType<typeof takeSlot>
    try {
      attempt = takeSlot(locksDir, recordsDir, base, tempName, watch, lockBreakMs)
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT') throw error
      return recreated() // locks/ was removed by another instance's destroy
    }
    if (!attempt.held) {
      return attempt.holder === undefined ? BUSY : { busy: true, holder: attempt.holder.pid }
    }
    onStep?.('slot-taken', key)
    check(key, path, condition.version, base, attempt.slot)
    onStep?.('checked', key)
    try {
      land()
    } catch (error) {
      if (errnoOf(error) !== 'ENOENT') throw error
      // Broken while we held the slot (our temp was removed): we never
      // committed, and the breaker may be committing now, so the slots stay.
      throw recordChanged(key)
    }
    onStep?.('renamed', key)
    removeChain(locksDir, base, attempt.slot)
    return undefined
  }

  return {
    create(key: string, temp: string, path: string): void {
      try {
        linkSync(temp, path)
      } catch (error) {
        linkFailed(key, error)
      }
    },

    async createAsync(key: string, temp: string, path: string): Promise<void> {
      try {
        await callback<void>((done) => link(temp, path, (error) => done(error, undefined)))
      } catch (error) {
        linkFailed(key, error)
      }
    },

    replace,

    /**
     * The slot's `symlink` and the `rename` run on the thread pool: on ext4
     * each waits for the journal while other writes' fsyncs commit (a
     * `renameSync` took 0.9-1.9 ms on the main thread at c=64 here), and off
     * the event loop that wait no longer stalls every other write. The slot
     * is held across those awaits, which is as safe as a holder descheduled
     * between two syscalls (a breaker's `unlink` of the temp file still wins
     * or loses against the `rename` as a whole); `slotsHeldAcrossAwait` makes
     * this thread's other writes wait for it like another live writer's
     * instead of breaking it. A first slot that is taken goes to the
     * synchronous walk, which judges, breaks and takes the next free one.
     */
    async replaceAsync(
      key: string,
      name: string,
      tempName: string,
      condition: { readonly version: string },
      watch: SlotWatch,
      land: () => void,
      landed: () => void,
    ): Promise<WriteAttempt | PoolCommit> {
      const path = join(recordsDir, name)
      const temp = join(recordsDir, tempName)
      const base = slotBase(name, condition)
      const first = join(locksDir, `${base}.1`)
      try {
        await callback<void>((done) => symlink(tempName, first, (error) => done(error, undefined)))
      } catch (error) {
        const code = errnoOf(error)
        if (code === 'ENOENT') return recreated() // locks/ was removed by another instance's destroy
        if (code !== 'EEXIST') throw error
        return (
          replace(key, name, tempName, condition, watch, land) ?? { cleanup: Promise.resolve() }
        )
      }
      slotsHeldAcrossAwait.add(tempName)
      try {
        onStep?.('slot-taken', key)
        check(key, path, condition.version, base, 1)
        onStep?.('checked', key)
        try {
          await callback<void>((done) => rename(temp, path, (error) => done(error, undefined)))
        } catch (error) {
          if (errnoOf(error) !== 'ENOENT') throw error
          throw recordChanged(key) // broken while we held the slot: see `replace`
        }
        landed()
      } finally {
        slotsHeldAcrossAwait.delete(tempName)
      }
      onStep?.('renamed', key)
      // The state the slot guarded is gone for good; its removal overlaps the directory fsync.
      return { cleanup: callback<void>((done) => unlink(first, () => done(null, undefined))) }
    },
  }
}
