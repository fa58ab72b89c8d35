/**
 * The native daemon queue (src/native-queue.ts) at the backend's level: the
 * appends of one event-loop turn on one instance share one transaction (the
 * group commit: the "producers in one process share the group
 * commit"), counted in the WAL, with the capacity still exact inside the
 * batch. The runtime's queue suites prove the rest of the path's semantics
 * (packages/runtime/test, `NATIVE_QUEUE_BACKENDS`). A mutant whose group
 * commit runs every operation in its own transaction shows the count fails
 * (12 commits: the 4 refused appends write nothing).
 *
 * The steps read the head's and tail's numbers (and an event's sequence
 * number) from the record's bytes without decoding its JSON when the record
 * starts as the runtime writes it (core's queue-record-numbers.ts), and decode
 * it in full otherwise: hand-written records check both, with mutants of the
 * reader (one that never matches, one without its guards) that the checks see.
 */
import type { Backend, NativeQueue, NativeQueueKeys } from '@agent-state/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type * as QueueRecordNumbers from '../../core/src/queue-record-numbers.js'
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

const EVENT = ',"eventId":"e","event":0,"triggeredAt":"2026-12-03T00:00:00.000Z"}'
const HEAD =
  '{"format":"agent-state/daemon-head","head":0,"attempts":0,"iterations":0,"claim":null}'
const text = (value: string) => new TextEncoder().encode(value)
/** An error's code (the mutants' backends throw their own core's `AgentStateError` class). */
const codeOf = (error: unknown) => (error as { code?: unknown }).code ?? error
const CLAIM = { holder: 'h', ttlMs: 30_000, claimedAt: '2026-12-03T00:00:00.000Z' }

/**
 * Tail records an append reads, as hand-written text: as the runtime writes
 * them, then each way the numbers' fast path must leave to the full decode
 * (another field order and an exponent decode; a leading zero, a fraction, a
 * number past the safe integers and a record cut short are `CORRUPT`).
 */
const TAILS = [
  '{"format":"agent-state/daemon-tail","next":3,"last":null}',
  '{"next":5,"format":"agent-state/daemon-tail","last":null}',
  '{"format":"agent-state/daemon-tail","next":1e1,"last":null}',
  '{"format":"agent-state/daemon-tail","next":07,"last":null}',
  '{"format":"agent-state/daemon-tail","next":7.5,"last":null}',
  '{"format":"agent-state/daemon-tail","next":9007199254740993,"last":null}',
  '{"format":"agent-state/daemon-tail","next":8,"last":{"format"',
]

/**
 * An append on each of {@link TAILS} (`[first, stored]` or the error code),
 * then a claim on a head record cut short after its numbers.
 */
async function handWrittenRecords(backend: Backend) {
  const queue = backend.nativeQueue as NativeQueue
  await backend.put(KEYS.head, text(HEAD))
  const appended: unknown[] = []
  for (const tail of TAILS) {
    await backend.put(KEYS.tail, text(tail))
    const outcome = queue.queueAppend(KEYS, { capacity: 100, mode: 'all', events: [EVENT] })
    appended.push(await outcome.then(({ first, stored }) => [first, stored], codeOf))
  }
  // Cut short after its numbers; head 3 is the event the first append stored.
  await backend.put(KEYS.head, text(HEAD.replace('"head":0', '"head":3').slice(0, -3)))
  const claim = await queue
    .queueClaim(KEYS, CLAIM)
    .then((delivery) => (delivery === null ? 'empty' : 'claimed'), codeOf)
  return { appended, claim }
}

const EXPECTED_READINGS = {
  appended: [[3, 1], [5, 1], [10, 1], 'CORRUPT', 'CORRUPT', 'CORRUPT', 'CORRUPT'],
  claim: 'CORRUPT',
}

/** `JSON.parse` calls of an append and a claim (then an ack) on records as the runtime writes them. */
async function parsesPerOperation(backend: Backend) {
  const queue = backend.nativeQueue as NativeQueue
  await backend.put(KEYS.head, text(HEAD))
  await backend.put(KEYS.tail, text('{"format":"agent-state/daemon-tail","next":0,"last":null}'))
  const parse = vi.spyOn(JSON, 'parse')
  try {
    await queue.queueAppend(KEYS, { capacity: 100, mode: 'all', events: [EVENT] })
    await queue.queueClaim(KEYS, CLAIM)
    return parse.mock.calls.length
  } finally {
    parse.mockRestore()
  }
}

describe('sqlite native queue', () => {
  const db = useTempDatabase()

  it('16 producers of one instance share one transaction; the capacity stays exact inside it', async () => {
    const outcome = await sixteenProducers(db.track(db.open()), db.path)
    expect(outcome).toEqual({ commits: 1, appended: EXPECTED_STORED, next: 12, event11: 11 })
  })

  it('reads the numbers of records written as the runtime writes them without JSON.parse, anything else in full', async () => {
    expect(await handWrittenRecords(db.track(db.open()))).toEqual(EXPECTED_READINGS)
    expect(await parsesPerOperation(db.track(db.open({ namespace: 'parses' })))).toBe(0)
  })
})

describe('sqlite native queue mutants', () => {
  const db = useTempDatabase()
  afterEach(() => {
    vi.doUnmock('../src/group-commit.js')
    vi.doUnmock('../../core/src/queue-record-numbers.js')
    vi.resetModules()
  })

  /** A backend from the package imported afresh with core's record-number reader replaced. */
  async function withReader(leadingNumbers: typeof QueueRecordNumbers.leadingNumbers) {
    vi.resetModules()
    vi.doMock('../../core/src/queue-record-numbers.js', async (importOriginal) => ({
      ...(await importOriginal<typeof QueueRecordNumbers>()),
      leadingNumbers,
    }))
    const { createSqliteBackend } = await import('../src/index.js')
    return db.track(createSqliteBackend({ path: db.path, namespace: `mutant-${Math.random()}` }))
  }

  it('a reader that never matches decodes every record, which the JSON.parse count sees', async () => {
    const backend = await withReader(() => null)
    // The check expects 0: here the append decodes the tail and head, the claim the head, the
    // tail and the event. The outcomes are unchanged (the full decode reads every record).
    expect(await parsesPerOperation(backend)).toBe(5)
    expect(await handWrittenRecords(await withReader(() => null))).toEqual(EXPECTED_READINGS)
  })

  it('a reader without its guards reads numbers the JSON does not hold, which the check sees', async () => {
    /** Digits after each template literal, whatever follows them and however the record ends. */
    const unguarded = (bytes: Uint8Array, template: readonly Uint8Array[]) => {
      const numbers: number[] = []
      let at = 0
      for (const literal of template) {
        if (literal.some((byte, i) => bytes[at + i] !== byte)) return null
        at += literal.length
        let value = 0
        for (; (bytes[at] ?? 0) >= 0x30 && (bytes[at] ?? 0) <= 0x39; at++) {
          value = value * 10 + ((bytes[at] as number) - 0x30)
        }
        numbers.push(value)
      }
      return numbers
    }
    const outcome = await handWrittenRecords(await withReader(unguarded))
    // The check expects [10, 1], then CORRUPT for the leading zero, the fraction, the unsafe
    // number, the tail and the head cut short.
    expect(outcome).toEqual({
      appended: [
        [3, 1],
        [5, 1],
        [1, 1],
        [7, 1],
        [7, 1],
        [9007199254740992, 0],
        [8, 1],
      ],
      claim: 'claimed',
    })
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
