import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import {
  AgentStateError,
  type Backend,
  isAgentStateError,
  type Lease,
  type StoredValue,
} from '@agent-state/core'
import { daemonError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import { daemonConfigKey, daemonEventKey, daemonHeadKey, daemonTailKey } from '../shared/layout.js'
import { releaseQuietly } from '../shared/owned-lease.js'
import {
  Delivery,
  type DeliveryOptions,
  deliveryOptionsSchema,
  removeLeftover,
} from './delivery.js'
import { encodeEvent } from './queue-event.js'
import {
  type DaemonQueueOptions,
  daemonQueueOptionsSchema,
  decodeRecord,
  type EventRecord,
  encodeRecord,
  eventRecordSchema,
  type HeadRecord,
  headRecordSchema,
  type QueueConfig,
  queueConfigSchema,
  RECORD_FORMATS,
  type TailRecord,
  tailRecordSchema,
} from './queue-records.js'
import { signalQueueChange } from './queue-signals.js'

/** Compare-and-set rounds a trigger tries before giving up with `UNAVAILABLE` (nothing stored). */
const MAX_TRIGGER_ROUNDS = 2000
/** Room the tail record needs beside the event itself. */
const RECORD_OVERHEAD_BYTES = 1024

/** The queue's counters at one moment; see {@link DaemonQueue.counts}. */
export interface QueueCounts {
  /** Sequence number of the oldest unacknowledged event. */
  readonly head: number
  /** Sequence number the next trigger gets. */
  readonly next: number
  /** Events held, pending plus in flight (what `capacity` bounds): `next - head`. */
  readonly queuedCount: number
  /** Acknowledged events so far. */
  readonly iterations: number
  /** How many times the head event has been handed out. */
  readonly headAttempts: number
}

/**
 * What this queue handle's producers did so far (see {@link DaemonQueue.producerStats}):
 * counts, not times, so a loaded machine does not change them.
 */
export interface ProducerStats {
  /** Events stored by this handle. */
  readonly events: number
  /** Conditional writes of the tail record that stored them (one per batch). */
  readonly writes: number
  /** Compare-and-set rounds lost to another producer and retried. */
  readonly lostRounds: number
}

/** Throws `INVALID_DAEMON_ID` unless `id` matches `ID_PATTERN`. */
export function assertDaemonId(id: unknown): asserts id is string {
  if (!isValidId(id)) {
    throw daemonError(
      'INVALID_DAEMON_ID',
      'Invalid daemon id: use 1-128 of [A-Za-z0-9_.-], starting with a letter or digit',
      { daemonId: typeof id === 'string' ? id.slice(0, 200) : typeof id },
    )
  }
}

/**
 * Creates the records of a new daemon queue (create-only).
 *
 * @throws `INVALID_DAEMON_ID`, `INVALID_QUEUE_OPTIONS`, `DAEMON_EXISTS`.
 */
export async function createDaemonQueue(
  backend: Backend,
  daemonId: string,
  options: DaemonQueueOptions = {},
  clock: () => number = Date.now,
): Promise<DaemonQueue> {
  assertDaemonId(daemonId)
  const parsed = daemonQueueOptionsSchema.safeParse(options)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw daemonError(
      'INVALID_QUEUE_OPTIONS',
      `Invalid daemon queue option ${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''}`,
      { daemonId, path: issue?.path.join('.') ?? '' },
    )
  }
  const { capacity, maxEventBytes, wakeIntervalMs, watchPaths } = parsed.data
  if (maxEventBytes + RECORD_OVERHEAD_BYTES > backend.capabilities.maxValueBytes) {
    throw daemonError('INVALID_QUEUE_OPTIONS', 'maxEventBytes exceeds what the backend can store', {
      daemonId,
      path: 'maxEventBytes',
      maxValueBytes: backend.capabilities.maxValueBytes,
    })
  }
  const config: QueueConfig = {
    format: RECORD_FORMATS.config,
    schemaVersion: 1,
    daemonId,
    capacity,
    maxEventBytes,
    wakeIntervalMs,
    watchPaths,
    createdAt: new Date(clock()).toISOString(),
  }
  // Head and tail first: a config record is only ever visible with both beside it, so
  // openDaemonQueue never sees half a queue. A crash before the config leaves two
  // records that a retry of the same create reuses.
  await createIfAbsent(backend, daemonHeadKey(daemonId), {
    format: RECORD_FORMATS.head,
    head: 0,
    attempts: 0,
    iterations: 0,
    claim: null,
  } satisfies HeadRecord)
  await createIfAbsent(backend, daemonTailKey(daemonId), {
    format: RECORD_FORMATS.tail,
    next: 0,
    last: null,
  } satisfies TailRecord)
  try {
    await backend.put(daemonConfigKey(daemonId), encodeRecord(config), { ifNoneMatch: '*' })
  } catch (error) {
    if (isAgentStateError(error, 'PRECONDITION_FAILED')) {
      throw daemonError('DAEMON_EXISTS', `Daemon ${daemonId} already exists`, { daemonId })
    }
    throw error
  }
  return new DaemonQueue(backend, config, clock)
}

/**
 * Opens an existing daemon queue (one read of its configuration).
 *
 * @throws `INVALID_DAEMON_ID`, `DAEMON_NOT_FOUND`, `QUEUE_CORRUPT`.
 */
export async function openDaemonQueue(
  backend: Backend,
  daemonId: string,
  clock: () => number = Date.now,
): Promise<DaemonQueue> {
  assertDaemonId(daemonId)
  const key = daemonConfigKey(daemonId)
  const found = await backend.get(key)
  if (found === null) {
    throw daemonError('DAEMON_NOT_FOUND', `No daemon queue ${daemonId}`, { daemonId })
  }
  const config = decodeRecord(queueConfigSchema, found.value, { daemonId, key })
  if (config.daemonId !== daemonId) {
    throw daemonError('QUEUE_CORRUPT', `Queue record ${key} names another daemon`, {
      daemonId,
      key,
    })
  }
  return new DaemonQueue(backend, config, clock)
}

async function createIfAbsent(backend: Backend, key: string, record: HeadRecord | TailRecord) {
  try {
    await backend.put(key, encodeRecord(record), { ifNoneMatch: '*' })
  } catch (error) {
    if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
  }
}

/**
 * A bounded, durable FIFO of JSON trigger events for one daemon, shared by
 * any number of producers and consumers in any number of processes. Every
 * operation reads and writes a constant number of records; nothing lists or
 * rewrites the queue.
 */
export class DaemonQueue {
  readonly #backend: Backend
  readonly #config: QueueConfig
  readonly #clock: () => number
  #stats = { events: 0, writes: 0, lostRounds: 0 }

  /** Use `createDaemonQueue` or `openDaemonQueue`. */
  constructor(backend: Backend, config: QueueConfig, clock: () => number) {
    this.#backend = backend
    this.#config = config
    this.#clock = clock
  }

  get daemonId(): string {
    return this.#config.daemonId
  }
  /** Events the queue may hold, pending plus in flight. */
  get capacity(): number {
    return this.#config.capacity
  }
  /** The stored configuration. */
  get config(): QueueConfig {
    return this.#config
  }

  /**
   * Appends `event` at the tail and resolves its sequence number. Producers
   * in many processes may call it at once: each event gets exactly one
   * number, numbers follow the order of the successful writes, and the queue
   * never holds more than `capacity` events.
   *
   * Protocol: read the tail record (version v, next sequence t) and then the
   * head; refuse when `t - head >= capacity`; make sure the previous newest
   * event has its own record (copy it out of the tail record if its producer
   * has not yet); then replace the tail record by `{ next: t + 1, last: event }`
   * with `ifMatch: v`. The event and its sequence number land in that one
   * conditional write, so a crash can never leave a number without its event.
   * The head only grows, so the head read is never newer than the head at the
   * write: `t + 1 - head_at_write <= t + 1 - head_read <= capacity`.
   *
   * @throws `INVALID_EVENT`, `EVENT_TOO_LARGE` (nothing stored), `QUEUE_FULL`
   *   (nothing stored), `QUEUE_CORRUPT`, `UNAVAILABLE` after
   *   {@link MAX_TRIGGER_ROUNDS} lost races (nothing stored), `INDETERMINATE`
   *   from the backend (the event may have landed).
   */
  async trigger(event: unknown): Promise<number> {
    const { daemonId, maxEventBytes, capacity } = this.#config
    const value = encodeEvent(event, maxEventBytes, daemonId)
    const eventId = randomBytes(12).toString('hex')
    for (let round = 0; round < MAX_TRIGGER_ROUNDS; round++) {
      const tailFound = await this.#getRequired(daemonTailKey(daemonId))
      const tail = this.#decode(tailRecordSchema, tailFound)
      const head = await this.readHead()
      if (tail.next - head.record.head >= capacity) {
        throw daemonError('QUEUE_FULL', `Daemon ${daemonId}'s queue holds ${capacity} events`, {
          daemonId,
          capacity,
        })
      }
      if (tail.last !== null && tail.last.seq >= head.record.head) await this.#copyOut(tail.last)
      const record: EventRecord = {
        format: RECORD_FORMATS.event,
        seq: tail.next,
        eventId,
        event: value,
        triggeredAt: new Date(this.#clock()).toISOString(),
      }
      try {
        await this.#backend.put(
          daemonTailKey(daemonId),
          encodeRecord({ format: RECORD_FORMATS.tail, next: tail.next + 1, last: record }),
          { ifMatch: tailFound.meta.version },
        )
      } catch (error) {
        if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
        this.#stats.lostRounds++
        await backoff(round)
        continue
      }
      this.#stats.events++
      this.#stats.writes++
      signalQueueChange(this.#backend, daemonId)
      return record.seq
    }
    throw new AgentStateError(
      'UNAVAILABLE',
      `Trigger lost ${MAX_TRIGGER_ROUNDS} races; nothing stored`,
      {
        retryable: true,
        context: { daemonId },
      },
    )
  }

  /**
   * Claims the head event for this consumer: one delivery in flight per
   * daemon, held by a lease on the head record (visibility timeout = lease
   * TTL, renewable with `heartbeat`). Resolves `null` when the queue is empty.
   *
   * @throws `DELIVERY_IN_FLIGHT` (retryable) while another delivery is live.
   */
  async claim(options: DeliveryOptions = {}): Promise<Delivery | null> {
    const delivery = await claimHead(this, this.#backend, options, this.#clock)
    if (delivery !== null) signalQueueChange(this.#backend, this.daemonId)
    return delivery
  }

  /**
   * Counters of this handle's producers: events stored, tail writes that stored them, and
   * compare-and-set rounds lost and retried (`lostRounds / events` is the retries per trigger).
   */
  producerStats(): ProducerStats {
    return { ...this.#stats }
  }

  /** The queue's counters (two reads). */
  async counts(): Promise<QueueCounts> {
    const [head, tail] = await Promise.all([this.readHead(), this.readTail()])
    return {
      head: head.record.head,
      next: tail.next,
      queuedCount: tail.next - head.record.head,
      iterations: head.record.iterations,
      headAttempts: head.record.attempts,
    }
  }

  /**
   * Up to `limit` events from the head on (the in-flight one first, if any),
   * read one record each: the first page of the queue without listing it.
   */
  async peek(limit = 16): Promise<EventRecord[]> {
    const [head, tail] = await Promise.all([this.readHead(), this.readTail()])
    const end = Math.min(tail.next, head.record.head + Math.max(0, Math.min(limit, 1000)))
    const seqs: number[] = []
    for (let seq = head.record.head; seq < end; seq++) seqs.push(seq)
    const found = await Promise.all(seqs.map((seq) => this.readEventIfPresent(seq, tail)))
    // An event acknowledged while we read is simply gone from the page.
    return found.filter((record): record is EventRecord => record !== null)
  }

  /** The head record and its version; internal to the queue's modules. */
  async readHead(): Promise<{ record: HeadRecord; version: string }> {
    const found = await this.#getRequired(daemonHeadKey(this.daemonId))
    return { record: this.#decode(headRecordSchema, found), version: found.meta.version }
  }

  /** The tail record; internal to the queue's modules. */
  async readTail(): Promise<TailRecord> {
    return this.#decode(tailRecordSchema, await this.#getRequired(daemonTailKey(this.daemonId)))
  }

  /**
   * The event at `seq`, from its own record or, for the newest, from the
   * tail record; `null` when it was acknowledged meanwhile. `tail` is a tail
   * record read earlier (the newest event never changes once written).
   */
  async readEventIfPresent(seq: number, tail: TailRecord): Promise<EventRecord | null> {
    const key = daemonEventKey(this.daemonId, seq)
    const own = await this.#backend.get(key)
    if (own !== null) return this.#checkedEvent(own, seq)
    if (tail.last?.seq === seq) return tail.last
    const fresh = await this.readTail()
    if (fresh.last?.seq === seq) return fresh.last
    // The tail moved past seq, so the producer after it copied it out first: read again.
    const again = await this.#backend.get(key)
    if (again !== null) return this.#checkedEvent(again, seq)
    const head = await this.readHead()
    if (head.record.head > seq) return null
    throw daemonError('QUEUE_CORRUPT', `Event ${seq} of daemon ${this.daemonId} is missing`, {
      daemonId: this.daemonId,
      seq,
    })
  }

  /**
   * Gives the previous newest event its own record before the tail record
   * is replaced. Usually its producer did it already (the create fails and
   * nothing changes). A copy that raced with the acknowledgement of that
   * event is removed again, so acknowledged events do not come back.
   */
  async #copyOut(last: EventRecord): Promise<void> {
    const key = daemonEventKey(this.daemonId, last.seq)
    let version: string
    try {
      version = (await this.#backend.put(key, encodeRecord(last), { ifNoneMatch: '*' })).version
    } catch (error) {
      if (isAgentStateError(error, 'PRECONDITION_FAILED')) return
      throw error
    }
    const head = await this.readHead()
    if (head.record.head > last.seq) {
      await this.#backend.delete(key, { ifMatch: version }).catch(() => undefined)
    }
  }

  #checkedEvent(found: StoredValue, seq: number): EventRecord {
    const record = this.#decode(eventRecordSchema, found)
    if (record.seq !== seq) {
      throw daemonError(
        'QUEUE_CORRUPT',
        `Event record ${found.meta.key} holds sequence ${record.seq}`,
        {
          daemonId: this.daemonId,
          key: found.meta.key,
        },
      )
    }
    return record
  }

  async #getRequired(key: string): Promise<StoredValue> {
    const found = await this.#backend.get(key)
    if (found === null) {
      // The configuration was read, so a missing counter record is damage, not absence.
      throw daemonError(
        'QUEUE_CORRUPT',
        `Daemon ${this.daemonId}'s queue record ${key} is missing`,
        {
          daemonId: this.daemonId,
          key,
        },
      )
    }
    return found
  }

  #decode<T>(schema: Parameters<typeof decodeRecord<T>>[0], found: StoredValue): T {
    return decodeRecord(schema, found.value, { daemonId: this.daemonId, key: found.meta.key })
  }
}

/**
 * The claim protocol: cheap emptiness check, take the head record's lease,
 * re-read the head under it, read the head event, and record the attempt
 * with a fenced write. Internal to `DaemonQueue.claim`.
 */
async function claimHead(
  queue: DaemonQueue,
  backend: Backend,
  input: DeliveryOptions,
  clock: () => number,
): Promise<Delivery | null> {
  const daemonId = queue.daemonId
  const parsed = deliveryOptionsSchema.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    throw daemonError(
      'INVALID_QUEUE_OPTIONS',
      `Invalid claim option ${issue?.path.join('.') ?? ''}`,
      {
        daemonId,
        path: issue?.path.join('.') ?? '',
      },
    )
  }
  const holder =
    parsed.data.holder ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
  const [before, tailBefore] = await Promise.all([queue.readHead(), queue.readTail()])
  if (before.record.head >= tailBefore.next) return null
  const key = daemonHeadKey(daemonId)
  let lease: Lease
  try {
    lease = await backend.acquireLease(key, { holder, ttlMs: parsed.data.visibilityTimeoutMs })
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_HELD')) {
      throw daemonError(
        'DELIVERY_IN_FLIGHT',
        `Daemon ${daemonId} has a delivery in flight`,
        { daemonId, holder: error.context.holder ?? null },
        error,
      )
    }
    throw error
  }
  try {
    // Under the lease nobody else can move the head.
    const head = await queue.readHead()
    const seq = head.record.head
    const tail = seq < tailBefore.next ? tailBefore : await queue.readTail()
    if (seq >= tail.next) {
      await releaseQuietly(backend, lease)
      return null
    }
    const [record] = await Promise.all([
      queue.readEventIfPresent(seq, tail),
      // Leftover of an ack that crashed between its head write and its cleanup. A read
      // first: on local backends it is far cheaper than a (durable) delete of nothing.
      seq > 0 ? removeLeftover(backend, daemonEventKey(daemonId, seq - 1)) : false,
    ])
    if (record === null) {
      throw daemonError('QUEUE_CORRUPT', `Head event ${seq} of ${daemonId} is missing`, {
        daemonId,
        seq,
      })
    }
    const claimed: HeadRecord = {
      ...head.record,
      attempts: head.record.attempts + 1,
      claim: { seq, holder, token: lease.token, claimedAt: new Date(clock()).toISOString() },
    }
    const meta = await backend.put(key, encodeRecord(claimed), { lease, ifMatch: head.version })
    return new Delivery(
      backend,
      daemonId,
      record,
      { record: claimed, version: meta.version },
      lease,
    )
  } catch (error) {
    await releaseQuietly(backend, lease)
    throw error
  }
}

/** Jittered exponential backoff between lost compare-and-set rounds, capped at 20 ms. */
function backoff(round: number): Promise<void> {
  const ceiling = Math.min(20, 2 ** Math.min(round, 5))
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling))
}
