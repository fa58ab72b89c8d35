/**
 * The native daemon queue (src/native-queue.ts) at the backend's level: the
 * appends of one event-loop turn on one instance share one transaction (the
 * group commit: the "producers in one process share the group
 * commit"), counted in the WAL, with the capacity still exact inside the
 * batch. The runtime's queue suites prove the rest of the path's semantics
 * (packages/runtime/test, `NATIVE_QUEUE_BACKENDS`). A mutant whose group
 * commit runs every operation in its own transaction shows the count fails
 * (12 commits: the 4 refused appends write nothing).
 */
import type { Backend, NativeQueue, NativeQueueKeys } from '@agent-state/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as GroupCommitModule from '../src/group-commit.js'
import { useTempDatabase } from './helpers.js'
import { walCommits } from './wal-commits.js'

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))
const KEYS: NativeQueueKeys = {
  head: 'daemons/q/head.json',
  tail: 'daemons/q/tail.json',
  eventPrefix: 'daemons/q/events/',
  eventDigits: 16,
}

/**
 * 16 appends of one event each, issued in one turn on one instance, against
 * a queue of capacity 12: the WAL commits they took, what each stored, and
 * the tail's next sequence number.
 */
async function sixteenProducers(backend: Backend, path: string) {
  await backend.put(
    KEYS.head,
    encode({ format: 'agent-state/daemon-head', head: 0, attempts: 0, iterations: 0, claim: null }),
  )
  await backend.put(KEYS.tail, encode({ format: 'agent-state/daemon-tail', next: 0, last: null }))
  const queue = backend.nativeQueue as NativeQueue
  const before = walCommits(path)
  const appended = await Promise.all(
    Array.from({ length: 16 }, (_, i) =>
      queue.queueAppend(KEYS, {
        capacity: 12,
        mode: 'all',
        events: [`,"eventId":"e${i}","event":${i},"triggeredAt":"2026-12-03T00:00:00.000Z"}`],
      }),
    ),
  )
  const commits = walCommits(path) - before
  const tail = JSON.parse(new TextDecoder().decode((await backend.get(KEYS.tail))?.value))
  const event11 = await backend.get(`${KEYS.eventPrefix}${'11'.padStart(16, '0')}`)
  return {
    commits,
    appended: appended.map(({ first, stored }) => [first, stored]),
    next: tail.next,
    event11: JSON.parse(new TextDecoder().decode(event11?.value)).event,
  }
}

/** What the real backend gives: one commit, sequence numbers in call order, 12 stored. */
const EXPECTED_STORED = [
  ...Array.from({ length: 12 }, (_, i) => [i, 1]),
  ...Array.from({ length: 4 }, () => [12, 0]),
]

describe('sqlite native queue', () => {
  const db = useTempDatabase()

  it('16 producers of one instance share one transaction; the capacity stays exact inside it', async () => {
    const outcome = await sixteenProducers(db.track(db.open()), db.path)
    expect(outcome).toEqual({ commits: 1, appended: EXPECTED_STORED, next: 12, event11: 11 })
  })
})

describe('sqlite native queue mutants', () => {
  const db = useTempDatabase()
  afterEach(() => {
    vi.doUnmock('../src/group-commit.js')
    vi.resetModules()
  })

  it('a group commit that runs every operation alone makes 12 commits, which the check sees', async () => {
    vi.resetModules()
    vi.doMock('../src/group-commit.js', async (importOriginal) => {
      const original = await importOriginal<typeof GroupCommitModule>()
      return {
        ...original,
        createGroupCommit: (options: GroupCommitModule.GroupCommitOptions) => {
          const commit = original.createGroupCommit(options)
          return {
            ...commit,
            // Each operation flushed as soon as it is queued: a transaction of its own.
            submit<T>(operation: string, body: () => T, bytes?: number): Promise<T> {
              const settled = commit.submit(operation, body, bytes)
              commit.flushNow()
              return settled
            },
          }
        },
      }
    })
    const { createSqliteBackend } = await import('../src/index.js')
    const backend = db.track(createSqliteBackend({ path: db.path, namespace: 'mutant' }))
    const outcome = await sixteenProducers(backend, db.path)
    // The check expects 1: one commit per stored append here (a refused one writes no WAL frame);
    // the queue's semantics are unchanged (the same numbers, 12 stored).
    expect(outcome).toEqual({ commits: 12, appended: EXPECTED_STORED, next: 12, event11: 11 })
  })
})
