import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import type { JsonValue } from '../shared/canonical-json.js'
import { daemonHeadKey } from '../shared/layout.js'
import type { SnapshotBody } from '../worker/index.js'
import { inspectWorker } from '../worker/index.js'
import { type DaemonQueue, readDaemonQueue } from './daemon-queue.js'
import type { EventRecord, HeadRecord, TailRecord } from './queue-records.js'

/** The daemon states (docs/runtime/daemons.md): working on an event, waiting for one, stopped (or finished). */
export const DAEMON_STATES = ['active', 'idle', 'stopped', 'done', 'closed'] as const
/** See {@link DAEMON_STATES}. */
export type DaemonState = (typeof DAEMON_STATES)[number]

/** The event a consumer holds right now. */
export interface InflightEvent {
  readonly seq: number
  readonly eventId: string
  readonly event: JsonValue
  readonly triggeredAt: string
  /** Hand-outs of this event so far, this one included. */
  readonly attempt: number
  readonly holder: string
  /** When the delivery becomes visible again unless renewed, on the backend's lease clock. */
  readonly expiresAt: number
}

/**
 * The daemon snapshot (docs/runtime/daemons.md): the persisted worker snapshot plus
 * live queue metadata. Each record is read once, in parallel, so fields may
 * straddle a concurrent trigger or ack (never a torn record).
 */
export interface DaemonSnapshot {
  readonly daemonId: string
  readonly daemonState: DaemonState
  /** First page of the events waiting behind the in-flight one (oldest first). */
  readonly pendingEvents: readonly JsonValue[]
  /** Events waiting, not counting the in-flight one. */
  readonly pendingEventCount: number
  readonly inflightEvent: InflightEvent | null
  /** Events held against the capacity: pending plus in flight. */
  readonly queuedEventCount: number
  readonly eventQueueCapacity: number
  readonly wakeIntervalMs: number | null
  readonly watchPaths: readonly string[]
  /** Acknowledged events: one per completed daemon turn. */
  readonly totalIterations: number
  /** When the worker snapshot was last persisted; `null` for a queue without a worker. */
  readonly savedAt: string | null
  /** The verified worker snapshot (`recorded_messages` live in its transcript), or `null`. */
  readonly worker: SnapshotBody | null
}

/** Options of {@link daemonSnapshot}. */
export interface DaemonSnapshotOptions {
  /** How many pending events to include, 0 to 1000. Default 16. */
  readonly pageSize?: number
}

/** The raw parts a snapshot is built from; shared with `waitForIdle`. */
export interface DaemonReading {
  readonly head: HeadRecord
  readonly tail: TailRecord
  readonly lease: Lease | null
  readonly worker: SnapshotBody | null
}

/** Reads head, tail, the delivery lease and the worker snapshot in parallel. */
export async function readDaemon(backend: Backend, queue: DaemonQueue): Promise<DaemonReading> {
  const [head, tail, lease, worker] = await Promise.all([
    queue.readHead(),
    queue.readTail(),
    backend.getLease(daemonHeadKey(queue.daemonId)),
    inspectWorker(backend, queue.daemonId).catch((error: unknown) => {
      // A bare queue (createDaemonQueue) has no worker; anything else is loud.
      if (isAgentStateError(error, 'SNAPSHOT_MISSING')) return null
      throw error
    }),
  ])
  return { head: head.record, tail, lease, worker }
}

/** Whether the head record's latest claim is still held (its lease is live with its token). */
export function liveClaim(reading: DaemonReading): HeadRecord['claim'] {
  const { claim } = reading.head
  if (claim === null || reading.lease === null) return null
  return reading.lease.token === claim.token && claim.seq === reading.head.head ? claim : null
}

/** The daemon state a reading shows. */
export function stateOf(reading: DaemonReading): DaemonState {
  const status = reading.worker?.status ?? 'running'
  if (status === 'suspended') return 'stopped'
  if (status === 'done' || status === 'closed') return status
  return liveClaim(reading) === null ? 'idle' : 'active'
}

/**
 * The daemon's snapshot: persisted worker state plus live queue metadata,
 * in a constant number of reads (plus one per pending event shown).
 *
 * @throws `INVALID_DAEMON_ID`, `DAEMON_NOT_FOUND`, `QUEUE_CORRUPT`, `SNAPSHOT_CORRUPT`.
 */
export async function daemonSnapshot(
  backend: Backend,
  daemonId: string,
  options: DaemonSnapshotOptions = {},
): Promise<DaemonSnapshot> {
  const queue = await readDaemonQueue(backend, daemonId)
  return snapshotFrom(queue, await readDaemon(backend, queue), options.pageSize ?? 16)
}

/** Builds the snapshot from a reading; reads the pending page. */
export async function snapshotFrom(
  queue: DaemonQueue,
  reading: DaemonReading,
  pageSize: number,
): Promise<DaemonSnapshot> {
  const { head, tail } = reading
  const claim = liveClaim(reading)
  const queued = Math.max(0, tail.next - head.head)
  const first = head.head + (claim === null ? 0 : 1)
  const end = Math.min(tail.next, first + Math.max(0, Math.min(pageSize, 1000)))
  const seqs: number[] = []
  for (let seq = claim === null ? first : head.head; seq < end; seq++) seqs.push(seq)
  const records = await Promise.all(seqs.map((seq) => queue.readEventIfPresent(seq, tail)))
  const present = records.filter((record): record is EventRecord => record !== null)
  const inflightRecord = claim === null ? undefined : present.find((r) => r.seq === claim.seq)
  const config = queue.config
  return {
    daemonId: queue.daemonId,
    daemonState: stateOf(reading),
    pendingEvents: present.filter((record) => record.seq >= first).map((record) => record.event),
    pendingEventCount: queued - (claim === null ? 0 : 1),
    inflightEvent:
      claim === null || inflightRecord === undefined || reading.lease === null
        ? null
        : {
            seq: claim.seq,
            eventId: inflightRecord.eventId,
            event: inflightRecord.event,
            triggeredAt: inflightRecord.triggeredAt,
            attempt: head.attempts,
            holder: claim.holder,
            expiresAt: reading.lease.expiresAt,
          },
    queuedEventCount: queued,
    eventQueueCapacity: config.capacity,
    wakeIntervalMs: config.wakeIntervalMs,
    watchPaths: config.watchPaths,
    totalIterations: head.iterations,
    savedAt: reading.worker?.updatedAt ?? null,
    worker: reading.worker,
  }
}
