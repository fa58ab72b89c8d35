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
  deliveryRequest,
  inFlight,
  removeLeftover,
} from './delivery.js'
import {
  claimNative,
  corruptAsQueue,
  eventAfterSeq,
  type NativePath,
  nativePath,
  nativeQueueOf,
} from './native-queue-path.js'
import { type EncodedEvent, encodeEvent, newEventId } from './queue-event.js'
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
/** Most events one write of the tail record carries (`triggerMany`, combined triggers). */
export const MAX_BATCH_EVENTS = 256
/**
 * Most event bytes one write carries when it holds more than one event: the
 * tail record is read by every producer, so it stays small. A single event
 * is bounded by `maxEventBytes` alone.
 */
export const MAX_BATCH_BYTES = 1024 * 1024
/** Longest wait after a lost compare-and-set round. */
const MAX_BACKOFF_MS = 1000

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
  const { capacity, maxEventBytes, wakeIntervalMs, watchPaths, path } = parsed.data
  // Refused before anything is written: a native queue needs the capability from its first record on.
  const native = path === 'native' || (path === 'auto' && nativeQueueOf(backend) !== null)
  if (native) nativePath(backend, daemonId)
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
    ...(native ? { path: 'native' as const } : {}),
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
 * Opens an existing daemon queue (one read of its configuration) on the path
 * it was created on.
 *
 * @throws `INVALID_DAEMON_ID`, `DAEMON_NOT_FOUND`, `QUEUE_CORRUPT`,
 *   `QUEUE_PATH_UNAVAILABLE` (a native queue on a backend without the
 *   `nativeQueue` capability: never used generically).
 */
export async function openDaemonQueue(
  backend: Backend,
  daemonId: string,
  clock: () => number = Date.now,
): Promise<DaemonQueue> {
  const queue = await readDaemonQueue(backend, daemonId, clock)
  if (queue.path === 'native') nativePath(backend, daemonId)
  return queue
}

/**
 * Opens a daemon queue for reading (`counts`, `peek`, snapshots): both paths
 * write the same records, so a reader needs no capability. Its `trigger` and
 * `claim` still refuse a native queue without one (`QUEUE_PATH_UNAVAILABLE`).
 * Internal to the runtime's inspectors.
 *
 * @throws `INVALID_DAEMON_ID`, `DAEMON_NOT_FOUND`, `QUEUE_CORRUPT`.
 */
export async function readDaemonQueue(
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
  /** The native path, resolved on first use (`undefined` until then). */
  #native: NativePath | undefined
  #stats = { events: 0, writes: 0, lostRounds: 0 }
  /** `trigger` calls waiting for the next write (see `#flush`). */
  readonly #waiting: Waiting[] = []
  #flushing = false

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
  /** The path the queue was created on (docs/runtime/daemons.md, "Queue paths"). */
  get path(): 'generic' | 'native' {
    return this.#config.path ?? 'generic'
  }

  /** The native path of a native queue (`QUEUE_PATH_UNAVAILABLE` without the capability), else `null`. */
  #nativePath(): NativePath | null {
    if (this.path !== 'native') return null
    this.#native ??= nativePath(this.#backend, this.daemonId)
    return this.#native
  }

  /**
   * Appends `event` at the tail and resolves its sequence number. Producers
   * in many processes may call it at once: each event gets exactly one
   * number, numbers follow the order of the successful writes, and the queue
   * never holds more than `capacity` events.
   *
   * Calls on one handle that overlap are combined: while one write of the
   * tail record is in flight, the calls made meanwhile wait and then go
   * together in the next write, in call order (so one handle's triggers keep
   * their order, and concurrent callers in one process do not race each other
   * for the tail record). Each call is still all or nothing on its own: when
   * only some of a combined write's events fit, the first ones are stored and
   * the rest refused with `QUEUE_FULL`, storing nothing of theirs.
   *
   * Protocol (one write, see {@link DaemonQueue.triggerMany}): read the tail
   * record (version v, next sequence t) and then the head; refuse when
   * `t - head >= capacity`; make sure the events of the previous write have
   * their own records (copy them out of the tail record if nobody has yet);
   * then replace the tail record by `{ next: t + k, last, earlier }` with
   * `ifMatch: v`. The events and their sequence numbers land in that one
   * conditional write, so a crash can never leave a number without its event.
   * The head only grows, so the head read is never newer than the head at the
   * write: `t + k - head_at_write <= t + k - head_read <= capacity`.
   *
   * @throws `INVALID_EVENT`, `EVENT_TOO_LARGE` (nothing stored), `QUEUE_FULL`
   *   (nothing stored), `QUEUE_CORRUPT`, `UNAVAILABLE` after
   *   {@link MAX_TRIGGER_ROUNDS} lost races (nothing stored), `INDETERMINATE`
   *   from the backend (the event may have landed).
   */
  trigger(event: unknown): Promise<number> {
    const { daemonId, maxEventBytes } = this.#config
    let encoded: EncodedEvent
    try {
      encoded = encodeEvent(event, maxEventBytes, daemonId)
    } catch (error) {
      return Promise.reject(error)
    }
    return new Promise<number>((resolve, reject) => {
      this.#waiting.push({ event: encoded, resolve, reject })
      if (!this.#flushing) void this.#flush()
    })
  }

  /**
   * Appends `events` at the tail in one conditional write of the tail record
   * and resolves their sequence numbers, consecutive and in array order. All
   * or nothing: when they do not all fit under the capacity it throws
   * `QUEUE_FULL` and stores none of them. An empty array stores nothing and
   * resolves `[]`.
   *
   * @throws `INVALID_EVENT` (also when `events` is not an array),
   *   `EVENT_TOO_LARGE` (an event above `maxEventBytes`, or more than
   *   {@link MAX_BATCH_EVENTS} events or {@link MAX_BATCH_BYTES} bytes in
   *   one batch), `QUEUE_FULL`, `QUEUE_CORRUPT`, `UNAVAILABLE`,
   *   `INDETERMINATE` as {@link DaemonQueue.trigger}; nothing is stored
   *   unless it resolves (or fails with `INDETERMINATE`).
   */
  async triggerMany(events: readonly unknown[]): Promise<number[]> {
    const { daemonId, maxEventBytes } = this.#config
    if (!Array.isArray(events)) {
      throw daemonError('INVALID_EVENT', 'triggerMany takes an array of events', {
        daemonId,
        type: typeof events,
      })
    }
    const values = events.map((event) => encodeEvent(event, maxEventBytes, daemonId))
    if (values.length === 0) return []
    const bytes = values.reduce<number>((sum, value) => sum + value.bytes, 0)
    if (values.length > MAX_BATCH_EVENTS || (values.length > 1 && bytes > this.#batchBytes())) {
      throw daemonError(
        'EVENT_TOO_LARGE',
        `A batch of ${values.length} events (${bytes} bytes) exceeds ${MAX_BATCH_EVENTS} events or ${this.#batchBytes()} bytes`,
        { daemonId, events: values.length, size: bytes, maxBatchBytes: this.#batchBytes() },
      )
    }
    const { first } = await this.#append(values, 'all')
    return values.map((_, k) => first + k)
  }

  /**
   * Writes the combined calls of {@link DaemonQueue.trigger}: one write at a
   * time per handle, each taking every call waiting when it starts (up to the
   * batch limits).
   */
  async #flush(): Promise<void> {
    this.#flushing = true
    try {
      while (this.#waiting.length > 0) {
        const batch: Waiting[] = []
        let bytes = 0
        for (const next of this.#waiting) {
          if (batch.length > 0) {
            if (batch.length >= MAX_BATCH_EVENTS || bytes + next.event.bytes > this.#batchBytes())
              break
          }
          batch.push(next)
          bytes += next.event.bytes
        }
        this.#waiting.splice(0, batch.length)
        try {
          const room = await this.#append(
            batch.map((waiting) => waiting.event),
            'prefix',
          )
          for (const [k, waiting] of batch.entries()) {
            if (k < room.stored) waiting.resolve(room.first + k)
            else waiting.reject(this.#full())
          }
        } catch (error) {
          for (const waiting of batch) waiting.reject(error)
        }
      }
    } finally {
      this.#flushing = false
    }
  }

  /**
   * The compare-and-set loop of one write of the tail record. With `'all'`
   * it stores every value or throws `QUEUE_FULL`; with `'prefix'` it stores
   * as many as fit (throwing `QUEUE_FULL` only when none does) and says how
   * many. A lost round waits a jittered, exponentially growing time scaled to
   * the round's own duration before the next one (see {@link backoff}).
   */
  async #append(
    values: readonly EncodedEvent[],
    mode: 'all' | 'prefix',
  ): Promise<{ first: number; stored: number }> {
    const { daemonId, capacity } = this.#config
    const eventIds = values.map(newEventId)
    const native = this.#nativePath()
    if (native !== null) {
      const triggeredAt = new Date(this.#clock()).toISOString()
      let room: { first: number; stored: number }
      try {
        room = await native.queue.queueAppend(native.keys, {
          capacity,
          mode,
          events: values.map((value, k) =>
            eventAfterSeq(eventIds[k] as string, value.json, triggeredAt),
          ),
        })
      } catch (error) {
        throw corruptAsQueue(error, daemonId)
      }
      if (room.stored === 0) throw this.#full()
      this.#stats.events += room.stored
      this.#stats.writes++
      signalQueueChange(this.#backend, daemonId)
      return room
    }
    for (let round = 0; round < MAX_TRIGGER_ROUNDS; round++) {
      const started = performance.now()
      const tailFound = await this.#getRequired(daemonTailKey(daemonId))
      const tail = this.#decode(tailRecordSchema, tailFound)
      const head = await this.readHead()
      const room = capacity - (tail.next - head.record.head)
      const stored = Math.min(room, values.length)
      if (stored <= 0 || (mode === 'all' && stored < values.length)) throw this.#full()
      await this.#copyOut(tailEvents(tail).filter((event) => event.seq >= head.record.head))
      const triggeredAt = new Date(this.#clock()).toISOString()
      const records = values.slice(0, stored).map(
        (value, k): EventRecord => ({
          format: RECORD_FORMATS.event,
          seq: tail.next + k,
          eventId: eventIds[k] as string,
          event: value.value,
          triggeredAt,
        }),
      )
      const last = records.at(-1) as EventRecord
      const next: TailRecord = {
        format: RECORD_FORMATS.tail,
        next: tail.next + stored,
        last,
        ...(stored > 1 ? { earlier: records.slice(0, -1) } : {}),
      }
      try {
        await this.#backend.put(daemonTailKey(daemonId), encodeRecord(next), {
          ifMatch: tailFound.meta.version,
        })
      } catch (error) {
        if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
        this.#stats.lostRounds++
        await backoff(round, performance.now() - started)
        continue
      }
      this.#stats.events += stored
      this.#stats.writes++
      signalQueueChange(this.#backend, daemonId)
      return { first: tail.next, stored }
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

  #full(): AgentStateError {
    const { daemonId, capacity } = this.#config
    return daemonError('QUEUE_FULL', `Daemon ${daemonId}'s queue holds ${capacity} events`, {
      daemonId,
      capacity,
    })
  }

  /** Event bytes one write may carry: what the tail record can hold, at most {@link MAX_BATCH_BYTES}. */
  #batchBytes(): number {
    // Each event record adds at most 256 bytes (seq, id, time, format) to its JSON.
    const room =
      this.#backend.capabilities.maxValueBytes - RECORD_OVERHEAD_BYTES - MAX_BATCH_EVENTS * 256
    return Math.max(0, Math.min(MAX_BATCH_BYTES, room))
  }

  /**
   * Claims the head event for this consumer: one delivery in flight per
   * daemon, held by a lease on the head record (visibility timeout = lease
   * TTL, renewable with `heartbeat`). Resolves `null` when the queue is empty.
   *
   * @throws `DELIVERY_IN_FLIGHT` (retryable) while another delivery is live.
   */
  async claim(options: DeliveryOptions = {}): Promise<Delivery | null> {
    const native = this.#nativePath()
    const delivery =
      native === null
        ? await claimHead(this, this.#backend, options, this.#clock)
        : await this.#claimNative(native, options)
    if (delivery !== null) signalQueueChange(this.#backend, this.daemonId)
    return delivery
  }

  /** The native claim: one `queueClaim`; its delivery settles natively too. */
  async #claimNative(native: NativePath, options: DeliveryOptions): Promise<Delivery | null> {
    const { holder, ttlMs } = deliveryRequest(this.daemonId, options)
    let claimed: Awaited<ReturnType<typeof claimNative>>
    try {
      claimed = await claimNative(this.#backend, native, this.daemonId, {
        holder,
        ttlMs,
        claimedAt: new Date(this.#clock()).toISOString(),
      })
    } catch (error) {
      if (isAgentStateError(error, 'LEASE_HELD')) throw inFlight(this.daemonId, error)
      throw error
    }
    if (claimed === null) return null
    return new Delivery(this.#backend, this.daemonId, claimed.record, claimed.head, claimed.lease, {
      readTail: () => this.readTail(),
      readEventIfPresent: (at, tail, own) => this.readEventIfPresent(at, tail, own),
      now: this.#clock,
      native,
    })
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
   * The event at `seq`, from its own record or, for the events of the latest
   * write, from the tail record; `null` when it was acknowledged meanwhile.
   * `tail` is a tail record read earlier (the events of a write never change
   * once written). `own` is the event's own record if the caller already
   * read it (in parallel with other reads), `undefined` to read it here.
   */
  async readEventIfPresent(
    seq: number,
    tail: TailRecord,
    own?: StoredValue | null,
  ): Promise<EventRecord | null> {
    const key = daemonEventKey(this.daemonId, seq)
    const found = own === undefined ? await this.#backend.get(key) : own
    if (found !== null) return this.#checkedEvent(found, seq)
    const inTail = tailEvents(tail).find((event) => event.seq === seq)
    if (inTail !== undefined) return inTail
    const fresh = await this.readTail()
    const inFresh = tailEvents(fresh).find((event) => event.seq === seq)
    if (inFresh !== undefined) return inFresh
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
   * Gives the events of the previous write their own records before the tail
   * record is replaced. Usually its producer's successor did it already (the
   * create fails and nothing changes). A copy that raced with the
   * acknowledgement of its event is removed again, so acknowledged events do
   * not come back.
   */
  async #copyOut(events: readonly EventRecord[]): Promise<void> {
    if (events.length === 0) return
    const created = await Promise.all(
      events.map(async (event) => {
        const key = daemonEventKey(this.daemonId, event.seq)
        try {
          const meta = await this.#backend.put(key, encodeRecord(event), { ifNoneMatch: '*' })
          return { key, seq: event.seq, version: meta.version }
        } catch (error) {
          if (isAgentStateError(error, 'PRECONDITION_FAILED')) return null
          throw error
        }
      }),
    )
    const copies = created.filter((copy) => copy !== null)
    if (copies.length === 0) return
    const head = await this.readHead()
    await Promise.all(
      copies
        .filter((copy) => head.record.head > copy.seq)
        .map((copy) =>
          this.#backend.delete(copy.key, { ifMatch: copy.version }).catch(() => undefined),
        ),
    )
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
  const { holder, ttlMs } = deliveryRequest(daemonId, input)
  const [before, tailBefore] = await Promise.all([queue.readHead(), queue.readTail()])
  if (before.record.head >= tailBefore.next) return null
  const key = daemonHeadKey(daemonId)
  let lease: Lease
  try {
    lease = await backend.acquireLease(key, { holder, ttlMs })
  } catch (error) {
    if (isAgentStateError(error, 'LEASE_HELD')) throw inFlight(daemonId, error)
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
      {
        readTail: () => queue.readTail(),
        readEventIfPresent: (at, tail, own) => queue.readEventIfPresent(at, tail, own),
        now: clock,
      },
    )
  } catch (error) {
    await releaseQuietly(backend, lease)
    throw error
  }
}

/**
 * Waits after a lost compare-and-set round: full jitter under a ceiling of
 * twice the lost round's own duration, doubled per further loss, at most
 * {@link MAX_BACKOFF_MS}. Scaling by the round's duration makes it fit every
 * backend: a fixed window (1 to 20 ms before) is long on Redis and far
 * shorter than one round trip to S3, where all losers then retried together.
 * After k losses the window holds about 2^(k+1) rounds, so c contenders
 * spread out after about log2(c) losses instead of colliding again.
 */
function backoff(round: number, roundMs: number): Promise<void> {
  const ceiling = Math.min(MAX_BACKOFF_MS, Math.max(1, roundMs) * 2 ** Math.min(round + 1, 10))
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling))
}

/** The events the tail record carries: those of the latest write, in sequence order. */
function tailEvents(tail: TailRecord): readonly EventRecord[] {
  if (tail.last === null) return []
  return tail.earlier === undefined ? [tail.last] : [...tail.earlier, tail.last]
}

/** A `trigger` call waiting for its handle's next write of the tail record. */
interface Waiting {
  readonly event: EncodedEvent
  readonly resolve: (seq: number) => void
  readonly reject: (error: unknown) => void
}
