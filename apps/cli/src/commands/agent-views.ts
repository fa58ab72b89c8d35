import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import {
  handoffEnvelopeSchema,
  handoffKey,
  inspectWorker,
  listSessions,
  sessionMarkerKey,
  WORKERS_PREFIX,
  workerSnapshotKey,
} from '@agent-state/runtime'
import { isoTime, printable } from '../output.js'
import { daemonsView, runsView } from './daemon-run-views.js'
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
  /** Why the snapshot could not be read (`SNAPSHOT_CORRUPT`, ...). */
  readonly error: RowError | null
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
      error: null,
    }
  } catch (error) {
    return {
      workerId,
      status: null,
      iterationsCompleted: null,
      updatedAt: null,
      lease,
      error: rowError(error),
    }
  }
}

/** Workers with their state and current owner (the snapshot lease). */
export const workersView: AgentView<WorkerRow> = {
  name: 'workers',
  summary: 'list workers with their state, lease holder and expiry',
  async *rows(backend, limit) {
    let cursor: string | undefined
    let left = limit ?? Number.POSITIVE_INFINITY
    do {
      const page = await backend.list({
        prefix: WORKERS_PREFIX,
        delimiter: '/',
        limit: Math.min(1000, left),
        ...(cursor === undefined ? {} : { cursor }),
      })
      for (const group of page.prefixes ?? []) {
        if (left-- <= 0) return
        yield await workerRow(backend, group.slice(WORKERS_PREFIX.length, -1))
      }
      cursor = page.cursor
    } while (cursor !== undefined && left > 0)
  },
  headers: ['WORKER', 'STATE', 'TURNS', 'UPDATED', 'LEASE HOLDER', 'TOKEN', 'EXPIRES'],
  cells: (row, now) => [
    printable(row.workerId),
    row.status ?? row.error?.code ?? '-',
    row.iterationsCompleted === null ? '-' : String(row.iterationsCompleted),
    row.updatedAt ?? '-',
    row.lease === null ? '-' : printable(row.lease.holder),
    row.lease === null ? '-' : String(row.lease.token),
    row.lease === null ? '-' : relative(row.lease.expiresAt - now),
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
]
