import { type Backend, isAgentStateError, type Lease, walkList } from '@agent-state/core'
import {
  daemonSnapshot,
  inspectRunHead,
  inspectWorker,
  listSessions,
  nextWorkerWake,
  readEffects,
  summarizeRun,
} from '@agent-state/runtime'
import {
  DAEMONS_PREFIX,
  decodeWake,
  handoffEnvelopeSchema,
  handoffKey,
  RUNS_PREFIX,
  runOpenPrefix,
  runStatePrefix,
  sessionMarkerKey,
  WAKES_RECORDS_PREFIX,
  WORKERS_PREFIX,
  workerSnapshotKey,
} from '@agent-state/runtime/internal'
import { isoTime, printable } from '../output.js'
import { relative } from './inspect.js'

/**
 * An agent-level view of what the runtime stored: one row per session,
 * worker, ... Each view lists its own rows and says how to print them, so a
 * new runtime record kind (daemon queues, effect-ledger runs) becomes a
 * command by adding one entry to {@link AGENT_VIEWS}.
 */
export interface AgentView<Row extends object> {
  /** The command name, plural (`sessions`). */
  readonly name: string
  /** One line for `--help`. */
  readonly summary: string
  /** The rows, in byte order of their ids. */
  rows(backend: Backend, limit?: number): AsyncGenerator<Row>
  /** Column headers for text output. */
  readonly headers: readonly string[]
  /** One row's text cells, matching `headers`. */
  cells(row: Row, now: number): readonly string[]
  /** Whether the row reports a damaged record (the command then exits 1 after printing everything). */
  broken(row: Row): boolean
}

/** A failure to read one record, kept in the row instead of ending the listing. */
export interface RowError {
  readonly code: string
  readonly message: string
}

function rowError(error: unknown): RowError {
  if (isAgentStateError(error)) return { code: error.code, message: error.message }
  throw error
}

/**
 * The row of a record that could not be read: what is known without reading it (its id, a
 * lease), every field in `unread` null, and the error (see {@link rowError}).
 */
function errorRow<Row extends { readonly error: RowError | null }, Known extends keyof Row>(
  known: Pick<Row, Known>,
  unread: readonly Exclude<keyof Row, Known | 'error'>[],
  error: unknown,
): Row {
  const nulls = Object.fromEntries(unread.map((field) => [field, null]))
  return { ...nulls, ...known, error: rowError(error) } as Row
}

/** The ids grouped under `prefix` (`daemons/<id>/...`), by a delimited listing: no values read. */
async function* idsUnder(backend: Backend, prefix: string, limit?: number): AsyncGenerator<string> {
  let cursor: string | undefined
  let left = limit ?? Number.POSITIVE_INFINITY
  do {
    const page = await backend.list({
      prefix,
      delimiter: '/',
      limit: Math.min(1000, left),
      ...(cursor === undefined ? {} : { cursor }),
    })
    for (const group of page.prefixes ?? []) {
      if (left-- <= 0) return
      yield group.slice(prefix.length, -1)
    }
    cursor = page.cursor
  } while (cursor !== undefined && left > 0)
}

/** A session row. */
export interface SessionRow {
  readonly sessionId: string
  /** When the session marker was last written. */
  readonly updatedAt: number | null
  /** The handoff: none, present (with its `summary.status` when it has one), or unreadable. */
  readonly handoff:
    | { readonly state: 'none' }
    | {
        readonly state: 'present'
        readonly writtenAt: string
        readonly writer: string
        readonly status: string | null
      }
    | { readonly state: 'corrupt'; readonly error: RowError }
}

async function sessionRow(backend: Backend, sessionId: string): Promise<SessionRow> {
  const [marker, handoff] = await Promise.all([
    backend.head(sessionMarkerKey(sessionId)),
    backend.get(handoffKey(sessionId)),
  ])
  let state: SessionRow['handoff'] = { state: 'none' }
  if (handoff !== null) {
    let parsed: unknown
    try {
      parsed = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(handoff.value))
    } catch {
      parsed = undefined
    }
    const envelope = handoffEnvelopeSchema.safeParse(parsed)
    if (envelope.success) {
      const summary = envelope.data.summary as { status?: unknown } | null
      state = {
        state: 'present',
        writtenAt: envelope.data.written_at,
        writer: envelope.data.writer.writerId,
        status:
          typeof summary === 'object' && summary !== null && typeof summary.status === 'string'
            ? summary.status
            : null,
      }
    } else {
      state = {
        state: 'corrupt',
        error: { code: 'HANDOFF_CORRUPT', message: 'the handoff envelope fails its schema' },
      }
    }
  }
  return { sessionId, updatedAt: marker?.updatedAt ?? null, handoff: state }
}

/** Sessions with their handoff status. */
export const sessionsView: AgentView<SessionRow> = {
  name: 'sessions',
  summary: 'list sessions with their handoff status',
  async *rows(backend, limit) {
    let cursor: string | undefined
    let left = limit ?? Number.POSITIVE_INFINITY
    do {
      const page = await listSessions(backend, {
        limit: Math.min(1000, left),
        ...(cursor === undefined ? {} : { cursor }),
      })
      for (const id of page.sessions) {
        if (left-- <= 0) return
        yield await sessionRow(backend, id)
      }
      cursor = page.cursor
    } while (cursor !== undefined && left > 0)
  },
  headers: ['SESSION', 'UPDATED', 'HANDOFF', 'STATUS', 'BY'],
  cells: (row) => [
    printable(row.sessionId),
    row.updatedAt === null ? '-' : isoTime(row.updatedAt),
    row.handoff.state === 'present' ? row.handoff.writtenAt : row.handoff.state,
    row.handoff.state === 'present'
      ? (row.handoff.status ?? '-')
      : row.handoff.state === 'corrupt'
        ? row.handoff.error.code
        : '-',
    row.handoff.state === 'present' ? printable(row.handoff.writer) : '-',
  ],
  broken: (row) => row.handoff.state === 'corrupt',
}

/** A worker row. */
export interface WorkerRow {
  readonly workerId: string
  /** The lifecycle state from the verified snapshot, or `null` when it cannot be read. */
  readonly status: string | null
  readonly iterationsCompleted: number | null
  readonly updatedAt: string | null
  /** The live lease on the snapshot: who owns the worker now, and until when. */
  readonly lease: Lease | null
  /**
   * A suspended worker's next wake (runtime `nextWorkerWake`): the earliest
   * pending wake of its resume registration by due time (`wake`, `null` when
   * none is pending) and the topic it waits on; `{ error }` when a wake record
   * cannot be read; `null` for a worker that is not suspended or was not
   * parked by the local runtime.
   */
  readonly nextWake: NextWakeCell | null
  /** Why the snapshot could not be read (`SNAPSHOT_CORRUPT`, ...). */
  readonly error: RowError | null
}

/** See {@link WorkerRow.nextWake}. */
export type NextWakeCell =
  | {
      readonly wake: {
        readonly wakeId: string
        readonly cause: string
        readonly dueAt: number
      } | null
      readonly topic: string | null
      /** A webhook call wakes it (no due time until called). */
      readonly webhook: boolean
    }
  | { readonly error: RowError }

/** The next wake of a worker in `status`, or `null` unless it is suspended (see {@link WorkerRow.nextWake}). */
export async function nextWakeOf(
  backend: Backend,
  workerId: string,
  status: string,
): Promise<NextWakeCell | null> {
  if (status !== 'suspended') return null
  try {
    return await nextWorkerWake(backend, workerId)
  } catch (error) {
    return { error: rowError(error) }
  }
}

/** A next wake as one cell: `timeout in 59m 0s`, `event fix-chosen`, `webhook call`, joined with `, or `. */
export function nextWakeText(cell: NextWakeCell | null, now: number): string {
  if (cell === null) return '-'
  if ('error' in cell) return cell.error.code
  const parts: string[] = []
  if (cell.wake !== null) parts.push(`${cell.wake.cause} ${relative(cell.wake.dueAt - now)}`)
  if (cell.topic !== null) parts.push(`event ${printable(cell.topic)}`)
  if (cell.webhook) parts.push('webhook call')
  return parts.length === 0 ? '-' : parts.join(', or ')
}

async function workerRow(backend: Backend, workerId: string): Promise<WorkerRow> {
  const lease = await backend.getLease(workerSnapshotKey(workerId))
  try {
    const body = await inspectWorker(backend, workerId)
    return {
      workerId,
      status: body.status,
      iterationsCompleted: body.iterationsCompleted,
      updatedAt: body.updatedAt,
      lease,
      nextWake: await nextWakeOf(backend, workerId, body.status),
      error: null,
    }
  } catch (error) {
    return errorRow<WorkerRow, 'workerId' | 'lease'>(
      { workerId, lease },
      ['status', 'iterationsCompleted', 'updatedAt', 'nextWake'],
      error,
    )
  }
}

/** Workers with their state and current owner (the snapshot lease). */
export const workersView: AgentView<WorkerRow> = {
  name: 'workers',
  summary:
    'list workers with their state, lease holder and expiry, and the next wake of parked ones',
  async *rows(backend, limit) {
    for await (const id of idsUnder(backend, WORKERS_PREFIX, limit))
      yield await workerRow(backend, id)
  },
  headers: ['WORKER', 'STATE', 'TURNS', 'UPDATED', 'LEASE HOLDER', 'TOKEN', 'EXPIRES', 'NEXT WAKE'],
  cells: (row, now) => [
    printable(row.workerId),
    row.status ?? row.error?.code ?? '-',
    row.iterationsCompleted === null ? '-' : String(row.iterationsCompleted),
    row.updatedAt ?? '-',
    row.lease === null ? '-' : printable(row.lease.holder),
    row.lease === null ? '-' : String(row.lease.token),
    row.lease === null ? '-' : relative(row.lease.expiresAt - now),
    nextWakeText(row.nextWake, now),
  ],
  broken: (row) => row.error !== null || (row.nextWake !== null && 'error' in row.nextWake),
}

/** A daemon row: its queue's live counters and the delivery in flight. */
export interface DaemonRow {
  readonly daemonId: string
  /** `idle`, `active`, `stopped`, `done`, `closed`; `null` when it cannot be read. */
  readonly state: string | null
  /** Events waiting, not counting the one in flight. */
  readonly pending: number | null
  /** The delivery in flight (live lease), or `null`. */
  readonly inflight: {
    readonly seq: number
    readonly attempt: number
    readonly holder: string
    readonly expiresAt: number
  } | null
  /** Pending plus in flight: what `capacity` bounds. */
  readonly queued: number | null
  readonly capacity: number | null
  /** Acknowledged events. */
  readonly iterations: number | null
  readonly error: RowError | null
}

async function daemonRow(backend: Backend, daemonId: string): Promise<DaemonRow> {
  try {
    // pageSize 0: the counters and the in-flight event only, no pending event bodies.
    const snapshot = await daemonSnapshot(backend, daemonId, { pageSize: 0 })
    const inflight = snapshot.inflightEvent
    return {
      daemonId,
      state: snapshot.daemonState,
      pending: snapshot.pendingEventCount,
      inflight:
        inflight === null
          ? null
          : {
              seq: inflight.seq,
              attempt: inflight.attempt,
              holder: inflight.holder,
              expiresAt: inflight.expiresAt,
            },
      queued: snapshot.queuedEventCount,
      capacity: snapshot.eventQueueCapacity,
      iterations: snapshot.totalIterations,
      error: null,
    }
  } catch (error) {
    return errorRow<DaemonRow, 'daemonId'>(
      { daemonId },
      ['state', 'pending', 'inflight', 'queued', 'capacity', 'iterations'],
      error,
    )
  }
}

/** Daemons (runtime `spawnDaemon`): pending, in flight, capacity. */
export const daemonsView: AgentView<DaemonRow> = {
  name: 'daemons',
  summary: 'list daemons with their queue: pending, in flight, capacity',
  async *rows(backend, limit) {
    for await (const id of idsUnder(backend, DAEMONS_PREFIX, limit))
      yield await daemonRow(backend, id)
  },
  headers: [
    'DAEMON',
    'STATE',
    'PENDING',
    'IN FLIGHT',
    'ATTEMPT',
    'HOLDER',
    'EXPIRES',
    'QUEUED',
    'CAPACITY',
    'ACKED',
  ],
  cells: (row, now) => [
    printable(row.daemonId),
    row.state ?? row.error?.code ?? '-',
    row.pending === null ? '-' : String(row.pending),
    row.inflight === null ? '-' : `seq ${row.inflight.seq}`,
    row.inflight === null ? '-' : String(row.inflight.attempt),
    row.inflight === null ? '-' : printable(row.inflight.holder),
    row.inflight === null ? '-' : relative(row.inflight.expiresAt - now),
    row.queued === null ? '-' : String(row.queued),
    row.capacity === null ? '-' : String(row.capacity),
    row.iterations === null ? '-' : String(row.iterations),
  ],
  broken: (row) => row.error !== null,
}

/** A run row: attempt, position, and its effects by state. */
export interface RunRow {
  readonly runId: string
  /** `open` or `completed`; `null` when it cannot be read. */
  readonly status: string | null
  /** The current attempt's id (`<runId>@<token>`) and how many attempts there were. */
  readonly attempt: {
    readonly attemptId: string
    readonly holder: string
    readonly count: number
  } | null
  /** Committed steps, and the step the run is at (`null`: at the end, or not started). */
  readonly position: { readonly seq: number; readonly next: string | null } | null
  /**
   * Effects by state, unknown first (runtime `summarizeRun`): `unknown` is counted from the
   * listing of the run's index of unknown effects, the effects in flight (planned or
   * submitted) are the other incomplete-markers, and `settled` (confirmed or failed) is the
   * effects listed minus those, so a row reads a bounded number of records whatever the
   * run's size. `submitted` and `planned` are split by reading the in-flight effects' records,
   * at most `RUN_SUMMARY_IN_FLIGHT` (100): when more are in flight, the row has `inFlight`
   * (their exact total) and `splitOf` (how many were read, the first by id), and `submitted`
   * and `planned` count the ones read (the table prints them `≥n`).
   */
  readonly effects: {
    readonly unknown: number
    readonly submitted: number
    readonly planned: number
    readonly settled: number | null
    /** Effects planned or submitted, exact; only when `splitOf` is set. */
    readonly inFlight?: number
    /** How many in-flight effects `submitted` and `planned` count, when more are in flight. */
    readonly splitOf?: number
    /**
     * The first incomplete ones (at most `RUN_SUMMARY_EFFECTS`, 20), unknown first, then by
     * id: id, kind, state. The counts above say how many there are in all.
     */
    readonly incomplete: readonly { effectId: string; kind: string; state: string }[]
    /**
     * Set on a row read with listings of at most `limit` keys each ({@link runsGlanceView}):
     * the counts it names are lower bounds (the table prints them `≥n`), and `settled` is
     * `null` when it cannot be told (more incomplete effects than the limit).
     */
    readonly atLeast?: { readonly limit: number; readonly counts: readonly AtLeastCount[] }
  } | null
  readonly error: RowError | null
}

/** A count of a {@link RunRow} that may be a lower bound (see its `atLeast`). */
export type AtLeastCount = 'unknown' | 'settled'

/** How many keys start with `prefix` (a listing, no value read). */
export async function countKeys(backend: Backend, prefix: string): Promise<number> {
  let count = 0
  for await (const page of walkList(backend, { prefix, limit: 1000 })) count += page.entries.length
  return count
}

async function runRow(backend: Backend, runId: string): Promise<RunRow> {
  try {
    const [summary, total] = await Promise.all([
      summarizeRun(backend, runId),
      countKeys(backend, `${RUNS_PREFIX}${runId}/effects/`),
    ])
    const { unknown, submitted, planned } = summary.unsettled
    const incomplete = summary.first.map((record) => ({
      effectId: record.effectId,
      kind: record.kind,
      state: record.state,
    }))
    return {
      runId,
      status: summary.head.status,
      attempt: {
        attemptId: summary.head.attempt.attemptId,
        holder: summary.head.attempt.holder,
        count: summary.head.attemptCount,
      },
      position: { seq: summary.steps, next: summary.lastStep?.next ?? null },
      effects: {
        unknown,
        submitted,
        planned,
        settled: Math.max(0, total - unknown - summary.inFlight),
        ...(summary.splitOf === null
          ? {}
          : { inFlight: summary.inFlight, splitOf: summary.splitOf }),
        incomplete,
      },
      error: null,
    }
  } catch (error) {
    return errorRow<RunRow, 'runId'>({ runId }, ['status', 'attempt', 'position', 'effects'], error)
  }
}

/** A submitted or planned count: `≥n` when it counts only the in-flight effects read (`splitOf`). */
function split(effects: NonNullable<RunRow['effects']>, count: number): string {
  return effects.splitOf === undefined ? String(count) : `\u2265${count}`
}

/** An unknown or settled count: `≥n` when it is a lower bound (`atLeast`), `?` when not known. */
function bounded(effects: NonNullable<RunRow['effects']>, name: AtLeastCount): string {
  const count = effects[name]
  if (count === null) return '?'
  return effects.atLeast?.counts.includes(name) === true ? `\u2265${count}` : String(count)
}

/**
 * Keys a glance row lists at most under each of a run's prefixes (its effects, its
 * incomplete-markers, its unknown markers): one listing page each, keys only.
 */
export const RUN_GLANCE_LISTED = 1000

/** Effect records a glance row reads at most: its first unknown ones, then as many in flight. */
export const RUN_GLANCE_EFFECTS = 10

/** The first `limit` keys under `prefix`, suffix only (one listing), and whether more follow. */
export async function firstKeys(
  backend: Backend,
  prefix: string,
  limit: number,
): Promise<{ readonly ids: readonly string[]; readonly more: boolean }> {
  const page = await backend.list({ prefix, limit })
  return {
    ids: page.entries.map((e) => e.key.slice(prefix.length)),
    more: page.cursor !== undefined,
  }
}

/**
 * A run's row at a cost that does not grow with the run, for views refreshed live (the UI's
 * overview and runs table): the head and newest step (runtime `inspectRunHead`), one listing
 * of at most {@link RUN_GLANCE_LISTED} keys under each of its effects, its incomplete-markers
 * and its index of unknown effects (effect-state-index.ts), and the records of its first
 * {@link RUN_GLANCE_EFFECTS} unknown effects and as many in flight (the split of
 * submitted and planned, `splitOf`). A listing that stops at the limit makes its counts lower
 * bounds (`atLeast`), never guesses; `agent-state runs` keeps the exact counts of
 * {@link runsView}. The unknown count is the index's markers (a marker a crash left in a move
 * is counted until the run's next owner repairs it); the effects shown are read and verified.
 */
async function runGlanceRow(backend: Backend, runId: string): Promise<RunRow> {
  try {
    const [view, effects, open, unknown] = await Promise.all([
      inspectRunHead(backend, runId),
      firstKeys(backend, `${RUNS_PREFIX}${runId}/effects/`, RUN_GLANCE_LISTED),
      firstKeys(backend, runOpenPrefix(runId), RUN_GLANCE_LISTED),
      firstKeys(backend, `${runStatePrefix(runId)}unknown/`, RUN_GLANCE_LISTED),
    ])
    const unknownIds = new Set(unknown.ids)
    const candidates = open.ids.filter((id) => !unknownIds.has(id))
    const sample = candidates.slice(0, RUN_GLANCE_EFFECTS)
    const records = await readEffects(backend, runId, [
      ...unknown.ids.slice(0, RUN_GLANCE_EFFECTS),
      ...sample,
    ])
    const byState = { unknown: 0, submitted: 0, planned: 0 }
    const incomplete: { effectId: string; kind: string; state: string }[] = []
    for (const [i, record] of records.entries()) {
      if (record === null || !(record.state in byState)) continue
      incomplete.push({ effectId: record.effectId, kind: record.kind, state: record.state })
      if (i >= RUN_GLANCE_EFFECTS) byState[record.state as keyof typeof byState]++
    }
    // In flight: the incomplete-markers without an unknown marker, exact when both listings are.
    const exactInFlight = open.more || unknown.more ? null : candidates.length
    const atLeast: AtLeastCount[] = []
    if (unknown.more) atLeast.push('unknown')
    // Settled: the effects listed less the incomplete ones, a lower bound past the limit of
    // effects, not known past the limit of incomplete-markers.
    const settled = open.more ? null : Math.max(0, effects.ids.length - open.ids.length)
    if (effects.more && settled !== null) atLeast.push('settled')
    const splitOf =
      exactInFlight !== null && sample.length === exactInFlight
        ? {}
        : { ...(exactInFlight === null ? {} : { inFlight: exactInFlight }), splitOf: sample.length }
    return {
      runId,
      status: view.head.status,
      attempt: {
        attemptId: view.head.attempt.attemptId,
        holder: view.head.attempt.holder,
        count: view.head.attemptCount,
      },
      position: { seq: view.steps, next: view.lastStep?.next ?? null },
      effects: {
        unknown: unknown.ids.length,
        submitted: byState.submitted,
        planned: byState.planned,
        settled,
        ...splitOf,
        incomplete,
        ...(atLeast.length === 0 ? {} : { atLeast: { limit: RUN_GLANCE_LISTED, counts: atLeast } }),
      },
      error: null,
    }
  } catch (error) {
    return errorRow<RunRow, 'runId'>({ runId }, ['status', 'attempt', 'position', 'effects'], error)
  }
}

/** Effect-ledger runs (runtime `openRun`): attempt, position, effects by state (unknown first). */
export const runsView: AgentView<RunRow> = {
  name: 'runs',
  summary: 'list runs with their attempt, position and effects by state (unknown first)',
  async *rows(backend, limit) {
    for await (const id of idsUnder(backend, RUNS_PREFIX, limit)) yield await runRow(backend, id)
  },
  headers: [
    'RUN',
    'STATUS',
    'ATTEMPT',
    'ATTEMPTS',
    'STEPS',
    'NEXT',
    'UNKNOWN',
    'SUBMITTED',
    'PLANNED',
    'SETTLED',
  ],
  cells: (row) => [
    printable(row.runId),
    row.status ?? row.error?.code ?? '-',
    row.attempt === null ? '-' : printable(row.attempt.attemptId),
    row.attempt === null ? '-' : String(row.attempt.count),
    row.position === null ? '-' : String(row.position.seq),
    row.position === null ? '-' : printable(row.position.next ?? '-'),
    row.effects === null ? '-' : bounded(row.effects, 'unknown'),
    row.effects === null ? '-' : split(row.effects, row.effects.submitted),
    row.effects === null ? '-' : split(row.effects, row.effects.planned),
    row.effects === null ? '-' : bounded(row.effects, 'settled'),
  ],
  broken: (row) => row.error !== null,
}

/**
 * The runs view with {@link runGlanceRow}s: each row's cost bounded whatever the run's size,
 * counts past the listing limit shown as lower bounds. The UI's overview and runs table.
 */
export const runsGlanceView: AgentView<RunRow> = {
  ...runsView,
  async *rows(backend, limit) {
    for await (const id of idsUnder(backend, RUNS_PREFIX, limit))
      yield await runGlanceRow(backend, id)
  },
}

/** A wake row: whom it wakes, why, when, and what became of it. */
export interface WakeRow {
  readonly wakeId: string
  /** `worker:<id>` or `daemon:<id>`; `null` when the record cannot be read. */
  readonly target: string | null
  /** `timeout`, `event`, `schedule`, `webhook` or `interval`. */
  readonly cause: string | null
  readonly dueAt: number | null
  /** `pending`, `fired`, `cancelled` or `failed`. */
  readonly state: string | null
  /** A fired (or failed) wake's firing: which dispatcher, how late, and whether its handler returned. */
  readonly firing: {
    readonly dispatcher: string
    readonly firedAt: number
    readonly latenessMs: number
    readonly attempts: number
    readonly delivered: boolean
  } | null
  /** A cancelled wake's reason. */
  readonly cancelReason: string | null
  /**
   * Why a `failed` wake was given up (the dispatcher's `maxAttempts`,
   * docs/runtime/wakes.md, Giving up): the last error's code (`null` when
   * it had none), the handler calls made, the error's message and whether
   * the worker's audit trail has its `wake_failed` entry.
   */
  readonly failure: {
    readonly code: string | null
    readonly attempts: number
    readonly message: string
    readonly failedAt: number
    readonly audited: boolean
  } | null
  readonly error: RowError | null
}

async function wakeRow(backend: Backend, key: string): Promise<WakeRow | null> {
  const wakeId = key.slice(WAKES_RECORDS_PREFIX.length)
  try {
    const stored = await backend.get(key)
    // Removed between the listing and the read (a destroyed namespace): no row.
    if (stored === null) return null
    const record = decodeWake(stored.value, key)
    return {
      wakeId,
      target:
        record.target.kind === 'worker'
          ? `worker:${record.target.workerId}`
          : `daemon:${record.target.daemonId}`,
      cause: record.cause,
      dueAt: record.dueAt,
      state: record.state,
      firing:
        record.firing === null
          ? null
          : {
              dispatcher: record.firing.dispatcher,
              firedAt: record.firing.firedAt,
              latenessMs: record.firing.latenessMs,
              attempts: record.delivery?.attempts ?? 0,
              delivered: record.delivery?.deliveredAt != null,
            },
      cancelReason: record.cancellation?.reason ?? null,
      failure:
        record.failure === null
          ? null
          : {
              code: record.failure.code,
              attempts: record.failure.attempts,
              message: record.failure.message,
              failedAt: record.failure.failedAt,
              audited: record.failure.audited,
            },
      error: null,
    }
  } catch (error) {
    return errorRow<WakeRow, 'wakeId'>(
      { wakeId },
      ['target', 'cause', 'dueAt', 'state', 'firing', 'cancelReason', 'failure'],
      error,
    )
  }
}

/**
 * Wakes (runtime `registerWake` and the dispatcher): pending ones with how
 * overdue they are, fired ones with their lateness, cancelled ones with the
 * reason, failed ones with the error code and attempts that gave them up. Ids start with the due time, so the rows come in due order.
 */
export const wakesView: AgentView<WakeRow> = {
  name: 'wakes',
  summary: 'list wakes in due order: target, cause, due time, state (why a wake failed), lateness',
  async *rows(backend, limit) {
    let cursor: string | undefined
    let left = limit ?? Number.POSITIVE_INFINITY
    do {
      const page = await backend.list({
        prefix: WAKES_RECORDS_PREFIX,
        limit: Math.min(1000, left),
        ...(cursor === undefined ? {} : { cursor }),
      })
      for (const entry of page.entries) {
        const row = await wakeRow(backend, entry.key)
        if (row === null) continue
        if (left-- <= 0) return
        yield row
      }
      cursor = page.cursor
    } while (cursor !== undefined && left > 0)
  },
  headers: ['WAKE', 'TARGET', 'CAUSE', 'DUE', 'STATE', 'LATENESS', 'BY'],
  cells: (row, now) => [
    printable(row.wakeId),
    row.target === null ? '-' : printable(row.target),
    row.cause ?? row.error?.code ?? '-',
    row.dueAt === null ? '-' : isoTime(row.dueAt),
    row.state === 'fired' && row.firing !== null && !row.firing.delivered
      ? 'fired (undelivered)'
      : row.failure !== null
        ? `failed (${row.failure.code === null ? 'no code' : printable(row.failure.code)}, ${row.failure.attempts} attempt${row.failure.attempts === 1 ? '' : 's'})`
        : (row.state ?? '-'),
    row.firing !== null
      ? `${row.firing.latenessMs} ms`
      : row.state === 'pending' && row.dueAt !== null && row.dueAt < now
        ? `overdue ${relative(row.dueAt - now).replace(/ ago$/, '')}`
        : '-',
    row.firing !== null
      ? printable(row.firing.dispatcher)
      : row.cancelReason === null
        ? '-'
        : printable(row.cancelReason),
  ],
  broken: (row) => row.error !== null,
}

/** Every agent-level view, each a command of its own. */
// biome-ignore lint/suspicious/noExplicitAny: rows differ per view; each view is typed by itself
export const AGENT_VIEWS: readonly AgentView<any>[] = [
  sessionsView,
  workersView,
  daemonsView,
  runsView,
  wakesView,
]
