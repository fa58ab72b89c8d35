import {
  type Backend,
  type Capabilities,
  escapeForDisplay,
  isAgentStateError,
  type Lease,
  redactUrl,
} from '@agent-state/core'
import {
  daemonSnapshot,
  type EffectRecord,
  inspectRunHead,
  inspectWorker,
  type RunHeadView,
  readEffects,
} from '@agent-state/runtime'
import {
  decodeHandoffEnvelope,
  handoffKey,
  RUNS_PREFIX,
  readMarker,
  readStep,
  runOpenPrefix,
  sessionDataPrefix,
  workerSnapshotKey,
} from '@agent-state/runtime/internal'
import {
  AGENT_VIEWS,
  type AgentView,
  type DaemonRow,
  daemonsView,
  firstKeys,
  nextWakeOf,
  nextWakeText,
  RUN_GLANCE_EFFECTS,
  RUN_GLANCE_LISTED,
  type RunRow,
  runsGlanceView,
  runsView,
  type SessionRow,
  sessionsView,
  type WorkerRow,
  workersView,
} from '../commands/agent-views.js'
import { writerText } from '../commands/keys.js'
import { isoTime } from '../output.js'
import { PREVIEW_READ_LIMIT_BYTES, previewValue, type ValuePreview } from './value-preview.js'

/**
 * What the UI's API answers, built from the same readers as the CLI's views (`agent-views.ts`,
 * `keys.ts`): no record is decoded here a second way. Every answer goes through
 * {@link forDisplay} before it is sent, so every string the page shows is already escaped
 * (control, separator and bidirectional formatting characters as `\uXXXX`); a key the page
 * must send back comes as a `ref` (its UTF-8 bytes in base64url), which escaping leaves alone.
 */

/** How many records of each kind the overview and the list views read at most. */
export const SCAN_LIMIT = 500

/**
 * The most `unknown-effect` items the overview lists per run (the unknown effects a runs row
 * reads, `RUN_GLANCE_EFFECTS`): a run with 10,000 unknown effects is one line of attention
 * with its count, not 10,000 lines; its page lists them all.
 */
export const ATTENTION_EFFECTS_PER_RUN = RUN_GLANCE_EFFECTS

/**
 * The UI's views: the CLI's, but runs as glance rows (`runsGlanceView`), whose cost does not
 * grow with the run, since the overview and the runs table are read again on every change.
 */
const UI_VIEWS: typeof AGENT_VIEWS = AGENT_VIEWS.map((view) =>
  view === runsView ? runsGlanceView : view,
)

/** Rows of a key page. */
export const KEY_PAGE_SIZE = 100

/** A key (or prefix, or cursor) as the page carries it: its UTF-8 bytes in base64url. */
export function refOf(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url')
}

/** The text a {@link refOf} names. */
export function textOfRef(ref: string): string {
  return Buffer.from(ref, 'base64url').toString('utf8')
}

/** `value` with every string in it escaped for display (see `escapeForDisplay`). */
export function forDisplay(value: unknown): unknown {
  if (typeof value === 'string') return escapeForDisplay(value)
  if (Array.isArray(value)) return value.map(forDisplay)
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, forDisplay(v)]))
  }
  return value
}

/** Reads at most `limit` rows of a view; `truncated` says whether there were more. */
async function scan<Row extends object>(
  view: AgentView<Row>,
  backend: Backend,
  limit = SCAN_LIMIT,
): Promise<{ rows: Row[]; truncated: boolean }> {
  const rows: Row[] = []
  for await (const row of view.rows(backend, limit + 1)) rows.push(row)
  const truncated = rows.length > limit
  return { rows: truncated ? rows.slice(0, limit) : rows, truncated }
}

/** One thing that needs an operator, most urgent kinds first. */
export interface AttentionItem {
  readonly kind:
    | 'unknown-effect'
    | 'run-needs-attention'
    | 'unreadable-record'
    | 'lease-expired'
    | 'queue-full'
  /** The view the subject is listed in (`runs`, `workers`, ...). */
  readonly view: string
  readonly subject: string
  readonly detail: string
}

const ATTENTION_ORDER: readonly AttentionItem['kind'][] = [
  'unknown-effect',
  'run-needs-attention',
  'unreadable-record',
  'lease-expired',
  'queue-full',
]

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {}
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1
  return counts
}

/** Whether a running worker's lease is gone or past its expiry (nobody is driving it). */
function leaseExpired(row: WorkerRow, now: number): boolean {
  return row.status === 'running' && (row.lease === null || row.lease.expiresAt <= now)
}

function queueFull(row: DaemonRow): boolean {
  return row.queued !== null && row.capacity !== null && row.queued >= row.capacity
}

function runNeedsAttention(row: RunRow): boolean {
  return row.effects !== null && row.effects.unknown > 0
}

/** What the backend is, for the page header: the URL without its credentials. */
export interface BackendInfo {
  readonly url: string
  readonly namespace: string
  readonly name: string
  readonly capabilities: Capabilities
}

/** The overview: backend, capabilities, counts per kind, and what needs attention. */
export async function overview(backend: Backend, info: BackendInfo, now = Date.now()) {
  const [sessions, workers, daemons, runs] = await Promise.all([
    scan<SessionRow>(sessionsView, backend),
    scan<WorkerRow>(workersView, backend),
    scan<DaemonRow>(daemonsView, backend),
    scan<RunRow>(runsGlanceView, backend),
  ])
  const attention: AttentionItem[] = []
  for (const run of runs.rows) {
    const unknown = (run.effects?.incomplete ?? []).filter((e) => e.state === 'unknown')
    for (const effect of unknown.slice(0, ATTENTION_EFFECTS_PER_RUN)) {
      attention.push({
        kind: 'unknown-effect',
        view: 'runs',
        subject: `${run.runId} / ${effect.effectId}`,
        detail: `effect ${effect.effectId} (${effect.kind}) of run ${run.runId}: outcome unknown, resolve it with resolveEffect`,
      })
    }
    if (runNeedsAttention(run)) {
      attention.push({
        kind: 'run-needs-attention',
        view: 'runs',
        subject: run.runId,
        detail: `${run.effects?.atLeast?.counts.includes('unknown') === true ? 'at least ' : ''}${run.effects?.unknown} unknown effect(s): the run cannot go on until they are resolved${
          (run.effects?.unknown ?? 0) > unknown.length
            ? ` (the first ${ATTENTION_EFFECTS_PER_RUN} are listed here; the run's page lists them all)`
            : ''
        }`,
      })
    }
  }
  const unreadable = (view: string, id: string, error: { code: string; message: string }) =>
    attention.push({
      kind: 'unreadable-record',
      view,
      subject: id,
      detail: `${error.code}: ${error.message}`,
    })
  for (const run of runs.rows) if (run.error !== null) unreadable('runs', run.runId, run.error)
  for (const w of workers.rows) if (w.error !== null) unreadable('workers', w.workerId, w.error)
  for (const d of daemons.rows) if (d.error !== null) unreadable('daemons', d.daemonId, d.error)
  for (const s of sessions.rows) {
    if (s.handoff.state === 'corrupt') unreadable('sessions', s.sessionId, s.handoff.error)
  }
  for (const w of workers.rows) {
    if (!leaseExpired(w, now)) continue
    attention.push({
      kind: 'lease-expired',
      view: 'workers',
      subject: w.workerId,
      detail:
        w.lease === null
          ? 'running, and no process holds its lease'
          : `running, lease of ${w.lease.holder} expired at ${isoTime(w.lease.expiresAt)}`,
    })
  }
  for (const d of daemons.rows) {
    if (!queueFull(d)) continue
    attention.push({
      kind: 'queue-full',
      view: 'daemons',
      subject: d.daemonId,
      detail: `${d.queued} of ${d.capacity} queued: triggers are refused`,
    })
  }
  attention.sort((a, b) => ATTENTION_ORDER.indexOf(a.kind) - ATTENTION_ORDER.indexOf(b.kind))
  return forDisplay({
    backend: { ...info, url: redactUrl(info.url) },
    scanLimit: SCAN_LIMIT,
    counts: {
      sessions: { total: sessions.rows.length, truncated: sessions.truncated },
      workers: {
        total: workers.rows.length,
        truncated: workers.truncated,
        byState: countBy(workers.rows, (w) => w.status ?? 'unreadable'),
      },
      runs: {
        total: runs.rows.length,
        truncated: runs.truncated,
        byStatus: countBy(runs.rows, (r) =>
          r.status === null ? 'unreadable' : runNeedsAttention(r) ? 'needs attention' : r.status,
        ),
      },
      daemons: { total: daemons.rows.length, truncated: daemons.truncated },
    },
    attention,
  })
}

/** Whether a row of a list view needs attention (highlighted on the page). */
function rowAttention(view: string, row: object, now: number): boolean {
  if (view === 'runs') return runNeedsAttention(row as RunRow) || (row as RunRow).error !== null
  if (view === 'workers')
    return leaseExpired(row as WorkerRow, now) || (row as WorkerRow).error !== null
  if (view === 'daemons') return queueFull(row as DaemonRow) || (row as DaemonRow).error !== null
  return (row as SessionRow).handoff?.state === 'corrupt'
}

/** The id a list view's row is about (`runId`, `workerId`, `daemonId`, `sessionId`). */
function idOf(row: object): string {
  for (const field of ['runId', 'workerId', 'daemonId', 'sessionId']) {
    const id = (row as Record<string, unknown>)[field]
    if (typeof id === 'string') return id
  }
  throw new Error('a list view row without an id')
}

/** The names of the list views (`sessions`, `workers`, `daemons`, `runs`). */
export const LIST_VIEWS: readonly string[] = AGENT_VIEWS.map((view) => view.name)

/** One list view as a table: the CLI view's own headers and cells, at most {@link SCAN_LIMIT} rows. */
export async function listView(backend: Backend, name: string, now = Date.now()) {
  const view = UI_VIEWS.find((v) => v.name === name)
  if (view === undefined) return null
  const { rows, truncated } = await scan(view, backend)
  return forDisplay({
    view: view.name,
    headers: view.headers,
    rows: rows.map((row) => ({
      ref: refOf(idOf(row)),
      cells: view.cells(row, now),
      broken: view.broken(row),
      attention: rowAttention(view.name, row, now),
    })),
    truncated,
    scanLimit: SCAN_LIMIT,
  })
}

/** One page of the key browser: the keys and `/`-groups directly under `prefix`. */
export async function keyPage(backend: Backend, prefix: string, cursor: string | undefined) {
  const page = await backend.list({
    ...(prefix === '' ? {} : { prefix }),
    delimiter: '/',
    limit: KEY_PAGE_SIZE,
    ...(cursor === undefined ? {} : { cursor }),
  })
  return forDisplay({
    prefix: { ref: refOf(prefix), name: prefix },
    prefixes: (page.prefixes ?? []).map((p) => ({ ref: refOf(p), name: p })),
    keys: page.entries.map((e) => ({
      ref: refOf(e.key),
      name: e.key,
      version: e.version,
      size: e.size ?? null,
      updatedAt: e.updatedAt === undefined ? null : isoTime(e.updatedAt),
    })),
    next: page.cursor === undefined ? null : refOf(page.cursor),
  })
}

function leaseText(lease: Lease | null) {
  return lease === null
    ? null
    : { holder: lease.holder, token: String(lease.token), expiresAt: isoTime(lease.expiresAt) }
}

/** One key: its meta (version, size, writer, time), its lease, and a preview of its value. */
export async function keyDetail(backend: Backend, key: string) {
  const [meta, lease] = await Promise.all([backend.head(key), backend.getLease(key)])
  let preview: ValuePreview | null = null
  if (meta !== null) {
    if (meta.size > PREVIEW_READ_LIMIT_BYTES) preview = previewValue(meta.size, null)
    else {
      const stored = await backend.get(key)
      // Deleted between the head and the get: shown as absent, never as empty.
      preview = stored === null ? null : previewValue(stored.value.length, stored.value)
    }
  }
  return forDisplay({
    key: { ref: refOf(key), name: key },
    meta:
      meta === null
        ? null
        : {
            version: meta.version,
            size: meta.size,
            writer: writerText(meta.writer),
            updatedAt: isoTime(meta.updatedAt),
          },
    lease: leaseText(lease),
    preview,
  })
}

/** A JSON value as pretty-printed lines (escaped by {@link forDisplay} with the rest). */
function jsonLines(value: unknown): string[] {
  return (JSON.stringify(value, null, 2) ?? 'null').split('\n')
}

const EFFECT_ORDER = ['unknown', 'submitted', 'planned'] as const

/** Unsettled effects read per page of a run's view (each is one verified record). */
export const EFFECT_PAGE_SIZE = 100

/**
 * The most keys a run's view counts under one prefix (its effects, its open markers): keys
 * only, one listing each (`RUN_GLANCE_LISTED`); past it the count is a lower bound.
 */
export const EFFECT_COUNT_LIMIT = RUN_GLANCE_LISTED

/**
 * Which page of a run's unsettled effects to show (after `cursor`, only `state` if given),
 * and of its steps (`steps`: the newest step of the page; the run's newest when absent).
 */
export interface EffectPage {
  readonly cursor?: string
  readonly state?: string
  readonly steps?: number
}

/** Committed steps shown per page of a run's view, newest first (each one record read). */
export const STEP_PAGE_SIZE = 10

/**
 * Bytes of a step's outputs (as stored, compact JSON) shown at most; a larger output shows
 * its first bytes and its size, so a page of steps is at most {@link STEP_PAGE_SIZE} of these.
 */
export const STEP_OUTPUT_PREVIEW_BYTES = 4 * 1024

/**
 * One page of a run's committed steps, newest first: steps `newest` down to
 * `newest - STEP_PAGE_SIZE + 1` (not below 1), each read and verified by the runtime
 * (`readStep`, against the run's newest attempt token) except the run's last step, which
 * `inspectRunHead` has read already. Step keys are numbered 1..n without a gap (the runtime
 * refuses a run with one), so a page needs no listing: its keys are known.
 */
async function stepPage(backend: Backend, view: RunHeadView, asked: number | undefined) {
  const count = view.steps
  const newest = Math.max(0, Math.min(count, asked ?? count))
  const oldest = Math.max(1, newest - STEP_PAGE_SIZE + 1)
  const seqs: number[] = []
  for (let seq = newest; seq >= oldest && seq > 0; seq--) seqs.push(seq)
  const token = view.head.attempt.token
  const records = await Promise.all(
    seqs.map((seq) =>
      seq === view.lastStep?.seq ? view.lastStep : readStep(backend, view.head.runId, seq, token),
    ),
  )
  const encoder = new TextEncoder()
  return {
    page: {
      size: STEP_PAGE_SIZE,
      count,
      newest,
      oldest: seqs.length === 0 ? 0 : oldest,
      older: oldest > 1 ? oldest - 1 : null,
      newer: newest < count ? Math.min(count, newest + STEP_PAGE_SIZE) : null,
    },
    steps: records.map((step, i) => {
      if (step === null) return { seq: seqs[i], missing: true }
      const stored = encoder.encode(JSON.stringify(step.outputs))
      return {
        seq: step.seq,
        step: step.step,
        next: step.next,
        attemptId: step.attemptId,
        committedAt: step.committedAt,
        outputs: previewValue(stored.length, stored, STEP_OUTPUT_PREVIEW_BYTES),
      }
    }),
  }
}

/**
 * One run (runtime `inspectRunHead`: verified, read-only; its newest step found by one
 * listing and, past 1,000 steps, a search by key): its head and audit trail, its position,
 * one page of its committed steps with their outputs ({@link STEP_PAGE_SIZE}, newest first,
 * each output cut at {@link STEP_OUTPUT_PREVIEW_BYTES}; `page.steps` picks an older page),
 * and one page of its unsettled effects ({@link EFFECT_PAGE_SIZE}
 * open markers, each effect's verified record read with `readEffects`, the run head once), with their transition
 * histories, unknown first within the page, and only those in `page.state` when it is given;
 * `effectsNext` continues. So every unknown effect is found by following the pages, and no
 * view reads more than one page of records whatever the run's size. The run's effects and
 * unsettled effects are counted from key listings (never read), up to
 * {@link EFFECT_COUNT_LIMIT}. `null` when there is no such run.
 */
export async function runDetail(backend: Backend, runId: string, page: EffectPage = {}) {
  let view: RunHeadView
  try {
    view = await inspectRunHead(backend, runId)
  } catch (error) {
    if (isAgentStateError(error, 'RUN_NOT_FOUND')) return null
    throw error
  }
  const openPrefix = runOpenPrefix(runId)
  const [total, open, markers] = await Promise.all([
    firstKeys(backend, `${RUNS_PREFIX}${runId}/effects/`, EFFECT_COUNT_LIMIT),
    firstKeys(backend, openPrefix, EFFECT_COUNT_LIMIT),
    backend.list({
      prefix: openPrefix,
      limit: EFFECT_PAGE_SIZE,
      ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
    }),
  ])
  // One head read for the page, not one per effect (readEffects).
  const records = await readEffects(
    backend,
    runId,
    markers.entries.map((entry) => entry.key.slice(openPrefix.length)),
  )
  // A marker whose effect is settled (a crash between outcome and marker removal) is stale,
  // as inspectRun treats it; a marker without a record is what inspectRun refuses to show.
  const unsettled = records.filter(
    (r): r is EffectRecord => r !== null && r.state !== 'confirmed' && r.state !== 'failed',
  )
  const pageCounts = countBy(unsettled, (e) => e.state)
  const incomplete = unsettled
    .filter((e) => page.state === undefined || e.state === page.state)
    .sort(
      (a, b) =>
        EFFECT_ORDER.indexOf(a.state as (typeof EFFECT_ORDER)[number]) -
          EFFECT_ORDER.indexOf(b.state as (typeof EFFECT_ORDER)[number]) ||
        (a.effectId < b.effectId ? -1 : 1),
    )
  const { head } = view
  const steps = await stepPage(backend, view, page.steps)
  return forDisplay({
    runId,
    status: head.status,
    attempt: { id: head.attempt.attemptId, holder: head.attempt.holder, count: head.attemptCount },
    createdAt: head.createdAt,
    updatedAt: head.updatedAt,
    steps: view.steps,
    next: view.lastStep?.next ?? null,
    stepPage: steps.page,
    stepList: steps.steps,
    // Exact when both counts are; a lower bound past the limit of effects; not known (null)
    // past the limit of unsettled ones. The run's page says "at least" for a lower bound.
    settled: open.more ? null : Math.max(0, total.ids.length - open.ids.length),
    counts: {
      effects: total.ids.length,
      unsettled: open.ids.length,
      exact: !total.more && !open.more,
      limit: EFFECT_COUNT_LIMIT,
    },
    effectPage: {
      size: EFFECT_PAGE_SIZE,
      state: page.state ?? null,
      first: page.cursor === undefined,
      read: records.length,
      byState: pageCounts,
      next: markers.cursor === undefined ? null : refOf(markers.cursor),
    },
    effects: incomplete.map((effect) => ({
      ref: refOf(effect.effectId),
      effectId: effect.effectId,
      kind: effect.kind,
      state: effect.state,
      idempotencyKey: effect.idempotencyKey,
      retryAllowed: effect.retryAllowed,
      history: effect.history.map((h) => `${h.state} at ${h.at} (${h.reason}, ${h.attemptId})`),
      transitions: effect.history.map((h) => ({ state: h.state, at: h.at })),
    })),
    audit: head.audit.map((entry) => ({
      event: entry.event,
      at: entry.at,
      attemptId: entry.attemptId,
      detail: JSON.stringify(entry.detail),
    })),
  })
}

/**
 * One worker (runtime `inspectWorker`: the verified snapshot) with its live lease: state,
 * owner, suspension and resume conditions, summary, transcript length, result, and its audit
 * trail. `null` when there is no such worker.
 */
export async function workerDetail(backend: Backend, workerId: string) {
  const lease = await backend.getLease(workerSnapshotKey(workerId))
  let body: Awaited<ReturnType<typeof inspectWorker>>
  try {
    body = await inspectWorker(backend, workerId)
  } catch (error) {
    if (isAgentStateError(error, 'SNAPSHOT_MISSING')) return null
    throw error
  }
  return forDisplay({
    workerId,
    status: body.status,
    iterationsCompleted: body.iterationsCompleted,
    createdAt: body.createdAt,
    updatedAt: body.updatedAt,
    lease: leaseText(lease),
    leaseExpired: body.status === 'running' && (lease === null || lease.expiresAt <= Date.now()),
    summary: body.summary,
    nextWake: nextWakeText(await nextWakeOf(backend, workerId, body.status), Date.now()),
    transcriptLength: body.transcript.length,
    state: jsonLines(body.state),
    suspension: body.suspension === null ? null : jsonLines(body.suspension),
    conditions: body.conditions === null ? null : jsonLines(body.conditions),
    result: jsonLines(body.result),
    audit: body.audit.map((entry) => JSON.stringify(entry)),
  })
}

/**
 * One daemon (runtime `daemonSnapshot`, with one pending event read): its queue's depth
 * against its capacity, the head event (the next one to deliver: the in-flight one when a
 * delivery holds it, else the oldest pending), the in-flight delivery with its attempt,
 * holder and visibility deadline (when its lease expires and the event is delivered again),
 * and the acknowledged count. A constant number of reads, whatever the queue's length.
 * `null` when there is no such daemon.
 */
export async function daemonDetail(backend: Backend, daemonId: string, now = Date.now()) {
  let snapshot: Awaited<ReturnType<typeof daemonSnapshot>>
  try {
    snapshot = await daemonSnapshot(backend, daemonId, { pageSize: 1 })
  } catch (error) {
    if (
      isAgentStateError(error, 'DAEMON_NOT_FOUND') ||
      isAgentStateError(error, 'INVALID_DAEMON_ID')
    )
      return null
    throw error
  }
  const inflight = snapshot.inflightEvent
  const pendingHead = snapshot.pendingEvents[0]
  return forDisplay({
    daemonId,
    state: snapshot.daemonState,
    queued: snapshot.queuedEventCount,
    capacity: snapshot.eventQueueCapacity,
    full: snapshot.queuedEventCount >= snapshot.eventQueueCapacity,
    pending: snapshot.pendingEventCount,
    acknowledged: snapshot.totalIterations,
    head:
      inflight !== null
        ? { delivery: 'in flight', event: jsonLines(inflight.event) }
        : pendingHead === undefined
          ? null
          : { delivery: 'pending', event: jsonLines(pendingHead) },
    inflight:
      inflight === null
        ? null
        : {
            seq: inflight.seq,
            eventId: inflight.eventId,
            attempt: inflight.attempt,
            holder: inflight.holder,
            triggeredAt: inflight.triggeredAt,
            visibleAgainAt: isoTime(inflight.expiresAt),
            expired: inflight.expiresAt <= now,
          },
    wakeIntervalMs: snapshot.wakeIntervalMs,
    watchPaths: snapshot.watchPaths,
    savedAt: snapshot.savedAt,
  })
}

/** Keys of a session's page (each one's head is read for its writer). */
export const SESSION_KEY_PAGE_SIZE = 100

/**
 * One session: its stored conflict policy and the recorded overrides (handles that chose a
 * weaker policy: who, which, when), its handoff envelope (runtime-verified; an unreadable one
 * shown with its error), and one page of its user keys ({@link SESSION_KEY_PAGE_SIZE}, after
 * `cursor`) with each key's writer, and the distinct writers of the page and the handoff.
 * `null` when there is no such session.
 */
export async function sessionDetail(backend: Backend, sessionId: string, cursor?: string) {
  let marker: Awaited<ReturnType<typeof readMarker>>
  try {
    marker = await readMarker(backend, sessionId)
  } catch (error) {
    if (
      isAgentStateError(error, 'SESSION_NOT_FOUND') ||
      isAgentStateError(error, 'INVALID_SESSION_ID')
    )
      return null
    throw error
  }
  const prefix = sessionDataPrefix(sessionId)
  const [stored, page] = await Promise.all([
    backend.get(handoffKey(sessionId)),
    backend.list({
      prefix,
      limit: SESSION_KEY_PAGE_SIZE,
      ...(cursor === undefined ? {} : { cursor }),
    }),
  ])
  let handoff:
    | { writtenAt: string; writer: string; envelope: string[] }
    | { error: string }
    | null = null
  if (stored !== null) {
    try {
      const envelope = decodeHandoffEnvelope(stored.value, sessionId)
      handoff = {
        writtenAt: envelope.written_at,
        writer: writerText(envelope.writer),
        envelope: jsonLines(envelope),
      }
    } catch (error) {
      if (!isAgentStateError(error)) throw error
      handoff = { error: `${error.code}: ${error.message}` }
    }
  }
  const heads = await Promise.all(page.entries.map((e) => backend.head(e.key)))
  const keys = page.entries.map((entry, i) => {
    const meta = heads[i]
    return {
      ref: refOf(entry.key),
      name: entry.key.slice(prefix.length),
      version: entry.version,
      size: meta?.size ?? entry.size ?? null,
      writer: meta === null || meta === undefined ? null : writerText(meta.writer),
      updatedAt: meta === null || meta === undefined ? null : isoTime(meta.updatedAt),
    }
  })
  const writers = new Set<string>()
  for (const key of keys) if (key.writer !== null) writers.add(key.writer)
  if (handoff !== null && 'writer' in handoff) writers.add(handoff.writer)
  return forDisplay({
    sessionId,
    conflictPolicy: marker.conflictPolicy,
    version: marker.version,
    overrides: marker.overrides.map((o) => ({ writer: o.writerId, policy: o.policy, at: o.at })),
    handoff,
    keys,
    writers: [...writers].sort(),
    next: page.cursor === undefined ? null : refOf(page.cursor),
  })
}
