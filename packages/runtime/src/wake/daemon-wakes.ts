import { type Backend, type Clock, isAgentStateError } from '@agent-state/core'
import { z } from 'zod'
import { openDaemonQueue } from '../daemon/daemon-queue.js'
import { wakeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import { daemonWakesKey } from '../shared/layout.js'
import { loadSnapshot } from '../worker/snapshot-store.js'
import { decideInterval, isCurrentIntervalWake } from './daemon-interval.js'
import { type FiredWake, WAKE_ID_PATTERN } from './wake-records.js'
import { cancelWake, registerWake } from './wake-registry.js'

/**
 * A daemon's idle wakes (docs/runtime/wakes.md, Daemon wakes): the interval
 * chain of `wakeIntervalMs`, the coalesced path wakes of `watchPaths`, and
 * the `idleWatchdogAttempts` watchdog. One registration record per daemon
 * names the pending interval wake and the pending path wake, so at most one
 * of each is pending; every change to it is a compare-and-set.
 */

const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })
/** Compare-and-set rounds on the registration before giving up (each lost round means another writer moved it). */
const MAX_ROUNDS = 100
/** Largest JSON size of the changed keys a path wake carries; the rest is counted, not listed. */
const MAX_PATHS_BYTES = 8 * 1024

const wakeIdSchema = z.string().regex(WAKE_ID_PATTERN)

/** The stored registration of a daemon's idle wakes, at `wakes/daemons/<daemon id>`. */
export const daemonWakesSchema = z.strictObject({
  format: z.literal('agent-state/daemon-wakes'),
  schemaVersion: z.literal(1),
  daemonId: z.string().refine(isValidId),
  /** `wakeIntervalMs`, or `null` for no interval wakes. */
  intervalMs: z.int().positive().nullable(),
  /** `watchPaths`: key prefixes of the daemon's backend whose changes wake it. */
  watchPaths: z.array(z.string()),
  /** `idleWatchdogAttempts`, or `null` for no watchdog. */
  idleWatchdogAttempts: z.int().positive().nullable(),
  /** The one pending interval wake, or `null` (no interval, the chain ended, or the watchdog tripped). */
  intervalWakeId: wakeIdSchema.nullable(),
  /** Interval wakes in a row that found the daemon's queue not empty (its previous wake not taken). */
  missedIntervals: z.int().nonnegative(),
  /** Set when `missedIntervals` reached `idleWatchdogAttempts`: the chain stopped until the daemon resumes. */
  watchdog: z
    .strictObject({
      trippedAt: z.int().nonnegative(),
      missedIntervals: z.int().positive(),
      wakeId: wakeIdSchema,
    })
    .nullable(),
  /** The one pending path wake, or `null`: changes seen while it is pending are coalesced into it. */
  pathWakeId: wakeIdSchema.nullable(),
  registeredAt: z.int().nonnegative(),
})
/** See {@link daemonWakesSchema}. */
export type DaemonWakes = z.infer<typeof daemonWakesSchema>

/** What a daemon's idle wake enqueues into its queue (the wake id lets the daemon deduplicate). */
export type DaemonWakeEvent =
  | {
      readonly kind: 'interval'
      readonly wakeId: string
      readonly dueAt: number
    }
  | {
      readonly kind: 'path_changed'
      readonly wakeId: string
      readonly dueAt: number
      /** Changed, added or removed keys seen when the wake was registered (capped; see `morePaths`). */
      readonly paths: readonly string[]
      readonly morePaths: number
    }

/** What the dispatcher's built-in daemon handler did with a wake. */
export type DaemonWakeResult =
  /** The wake's event was enqueued into the daemon's queue. */
  | 'enqueued'
  /** An interval wake met a queue that was not empty: nothing enqueued (never piles up). */
  | 'skipped-busy'
  /** An interval wake that tripped the watchdog: nothing enqueued, the chain stopped. */
  | 'watchdog'
  /** An interval wake for a daemon that is done or closed: the chain ended. */
  | 'ended'
  /** A wake the registration no longer names (an interval wake from an earlier chain). */
  | 'stale'

const pathPayloadSchema = z.strictObject({
  kind: z.literal('path_changed'),
  paths: z.array(z.string()),
  morePaths: z.int().nonnegative(),
})

interface Found {
  readonly record: DaemonWakes
  readonly version: string
}

/**
 * A daemon's idle-wake registration, or `null` when it has none.
 *
 * @throws `WAKE_CORRUPT` for a record that is not JSON or fails its schema.
 */
export async function readDaemonWakes(
  backend: Backend,
  daemonId: string,
): Promise<DaemonWakes | null> {
  return (await readFound(backend, daemonId))?.record ?? null
}

async function readFound(backend: Backend, daemonId: string): Promise<Found | null> {
  const key = daemonWakesKey(daemonId)
  const found = await backend.get(key)
  if (found === null) return null
  let parsed: ReturnType<typeof daemonWakesSchema.safeParse>
  try {
    parsed = daemonWakesSchema.safeParse(JSON.parse(decoder.decode(found.value)))
  } catch (error) {
    throw wakeError(
      'WAKE_CORRUPT',
      `The daemon wake registration ${key} is not JSON`,
      { key },
      error,
    )
  }
  if (!parsed.success || parsed.data.daemonId !== daemonId) {
    throw wakeError('WAKE_CORRUPT', `The daemon wake registration ${key} fails its schema`, { key })
  }
  return { record: parsed.data, version: found.meta.version }
}

function encode(record: DaemonWakes): Uint8Array {
  return encoder.encode(JSON.stringify(record))
}

/**
 * Applies `change` to the registration by compare-and-set, re-reading after
 * every lost race. `change` returns `null` to write nothing; the result says
 * whether a write landed.
 */
async function updateRegistration(
  backend: Backend,
  daemonId: string,
  change: (record: DaemonWakes) => DaemonWakes | null,
): Promise<boolean> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const found = await readFound(backend, daemonId)
    if (found === null) return false
    const next = change(found.record)
    if (next === null) return false
    try {
      await backend.put(daemonWakesKey(daemonId), encode(next), { ifMatch: found.version })
      return true
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }
  throw wakeError('WAKE_BUSY', `The daemon wake registration of ${daemonId} kept changing`, {
    daemonId,
  })
}

/** What {@link armDaemonWakes} needs: the daemon's spawn options. */
export interface DaemonWakeSettings {
  readonly intervalMs: number | null
  readonly watchPaths: readonly string[]
  readonly idleWatchdogAttempts: number | null
}

/**
 * Registers a daemon's idle wakes (by `spawnDaemon`), or re-arms its
 * interval chain (by `resumeDaemon`, after the watchdog tripped or the chain
 * ended). Does nothing for a daemon with no interval and no watched path.
 * The first interval wake is due `intervalMs` after `clock()`.
 *
 * The wake is registered before the registration names it: a process killed
 * in between leaves a wake no registration names, which fires as `stale`.
 */
export async function armDaemonWakes(
  backend: Backend,
  daemonId: string,
  settings: DaemonWakeSettings,
  clock: Clock,
): Promise<void> {
  const { intervalMs, watchPaths, idleWatchdogAttempts } = settings
  if (intervalMs === null && watchPaths.length === 0) return
  const found = await readFound(backend, daemonId)
  if (
    found !== null &&
    (found.record.intervalMs === null || found.record.intervalWakeId !== null)
  ) {
    return
  }
  const wake =
    intervalMs === null
      ? null
      : await registerWake(backend, {
          target: { kind: 'daemon', daemonId },
          cause: 'interval',
          dueAt: clock() + intervalMs,
          payload: { kind: 'interval' },
          clock,
        })
  if (found === null) {
    const record: DaemonWakes = {
      format: 'agent-state/daemon-wakes',
      schemaVersion: 1,
      daemonId,
      intervalMs,
      watchPaths: [...watchPaths],
      idleWatchdogAttempts,
      intervalWakeId: wake?.id ?? null,
      missedIntervals: 0,
      watchdog: null,
      pathWakeId: null,
      registeredAt: clock(),
    }
    await backend.put(daemonWakesKey(daemonId), encode(record), { ifNoneMatch: '*' })
    return
  }
  const landed = await updateRegistration(backend, daemonId, (record) =>
    record.intervalWakeId !== null
      ? null
      : { ...record, intervalWakeId: wake?.id ?? null, missedIntervals: 0, watchdog: null },
  )
  if (!landed && wake !== null) {
    await cancelWake(backend, wake.id, { reason: 'daemon interval already armed', clock }).catch(
      () => undefined,
    )
  }
}

/** Options of {@link notePathChange}. */
export interface NotePathChangeOptions {
  readonly clock: Clock
  /** How long after the change the path wake is due: changes within it coalesce. */
  readonly debounceMs: number
}

/**
 * Records that keys under a daemon's watched paths changed: registers a path
 * wake (cause `event`) due `debounceMs` later, unless one is pending, which
 * then covers this change too (its handler clears it before enqueueing, so
 * its event is enqueued after every change it coalesced). Returns the new
 * wake's id, or `null` when coalesced or the daemon has no registration.
 */
export async function notePathChange(
  backend: Backend,
  daemonId: string,
  paths: readonly string[],
  options: NotePathChangeOptions,
): Promise<string | null> {
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const found = await readFound(backend, daemonId)
    if (found === null || found.record.pathWakeId !== null) return null
    const wake = await registerWake(backend, {
      target: { kind: 'daemon', daemonId },
      cause: 'event',
      dueAt: options.clock() + options.debounceMs,
      payload: { kind: 'path_changed', ...cappedPaths(paths) },
      clock: options.clock,
    })
    try {
      await backend.put(
        daemonWakesKey(daemonId),
        encode({ ...found.record, pathWakeId: wake.id }),
        { ifMatch: found.version },
      )
      return wake.id
    } catch (error) {
      await cancelWake(backend, wake.id, { reason: 'path change coalesced', clock: options.clock })
        .then(() => undefined)
        .catch(() => undefined)
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }
  throw wakeError('WAKE_BUSY', `The daemon wake registration of ${daemonId} kept changing`, {
    daemonId,
  })
}

/** The sorted keys up to {@link MAX_PATHS_BYTES} of JSON, and how many more there were. */
function cappedPaths(paths: readonly string[]): { paths: string[]; morePaths: number } {
  const sorted = [...new Set(paths)].sort()
  const kept: string[] = []
  let size = 2
  for (const path of sorted) {
    size += encoder.encode(JSON.stringify(path)).byteLength + 1
    if (size > MAX_PATHS_BYTES) break
    kept.push(path)
  }
  return { paths: kept, morePaths: sorted.length - kept.length }
}

/**
 * The dispatcher's built-in daemon handler (its `daemons` option): a fired
 * `interval` or `event` (path) wake of a daemon becomes an event in the
 * daemon's queue carrying the wake id (at-least-once: a redelivered wake may
 * enqueue again, and the daemon deduplicates on `wakeId`).
 *
 * - `interval`: only the wake the registration names acts (others are
 *   `stale`). A daemon that is done or closed ends the chain. If the queue is
 *   empty (the daemon is idle) `{ kind: 'interval', wakeId, dueAt }` is
 *   enqueued; otherwise nothing is (ticks never pile up) and the miss is
 *   counted. When `idleWatchdogAttempts` misses in a row are reached, the
 *   watchdog trips: recorded in the registration, no next wake. Otherwise the
 *   next interval wake is registered, due `intervalMs` after now.
 * - `event` with a `path_changed` payload: clears the registration's pending
 *   path wake if it is this one, then enqueues `{ kind: 'path_changed',
 *   wakeId, dueAt, paths, morePaths }`.
 *
 * @throws `WAKE_CORRUPT` (a payload or registration that fails its schema),
 *   the queue's codes (`QUEUE_FULL`: the wake is delivered again later).
 */
export async function handleDaemonWake(
  backend: Backend,
  wake: FiredWake,
  clock: Clock,
): Promise<DaemonWakeResult> {
  if (wake.target.kind !== 'daemon') {
    throw wakeError('WAKE_CORRUPT', `Wake ${wake.id} is not a daemon's`, { wakeId: wake.id })
  }
  const daemonId = wake.target.daemonId
  if (wake.cause === 'event') return handlePathWake(backend, wake, daemonId)
  const found = await readFound(backend, daemonId)
  if (found === null || !isCurrentIntervalWake(found.record, wake.id)) return 'stale'
  const { record } = found
  const intervalMs = record.intervalMs
  if (intervalMs === null) return 'stale'
  const { body } = await loadSnapshot(backend, daemonId)
  if (body.status === 'done' || body.status === 'closed') {
    await updateRegistration(backend, daemonId, (current) =>
      current.intervalWakeId === wake.id ? { ...current, intervalWakeId: null } : null,
    )
    return 'ended'
  }
  const queue = await openDaemonQueue(backend, daemonId, clock)
  const { enqueue, missed, tripped } = decideInterval(record, (await queue.counts()).queuedCount)
  if (enqueue) {
    const event: DaemonWakeEvent = { kind: 'interval', wakeId: wake.id, dueAt: wake.dueAt }
    await queue.trigger(event)
  }
  const next = tripped
    ? null
    : await registerWake(backend, {
        target: { kind: 'daemon', daemonId },
        cause: 'interval',
        dueAt: clock() + intervalMs,
        payload: { kind: 'interval' },
        clock,
      })
  const landed = await updateRegistration(backend, daemonId, (current) =>
    current.intervalWakeId !== wake.id
      ? null
      : {
          ...current,
          intervalWakeId: next?.id ?? null,
          missedIntervals: missed,
          watchdog: tripped
            ? { trippedAt: clock(), missedIntervals: missed, wakeId: wake.id }
            : current.watchdog,
        },
  )
  if (!landed) {
    // Another delivery of this wake moved the chain on first: keep its next wake only.
    if (next !== null) {
      await cancelWake(backend, next.id, { reason: 'daemon interval moved on', clock }).catch(
        () => undefined,
      )
    }
    return 'stale'
  }
  if (tripped) return 'watchdog'
  return enqueue ? 'enqueued' : 'skipped-busy'
}

async function handlePathWake(
  backend: Backend,
  wake: FiredWake,
  daemonId: string,
): Promise<DaemonWakeResult> {
  const payload = pathPayloadSchema.safeParse(wake.payload)
  if (!payload.success) {
    throw wakeError('WAKE_CORRUPT', `Daemon wake ${wake.id} has no path_changed payload`, {
      wakeId: wake.id,
    })
  }
  // Clear first, enqueue second: a change noted after the clear registers a
  // new wake, and one coalesced before it is covered by the event below.
  // A redelivery finds it cleared and enqueues again (at-least-once).
  await updateRegistration(backend, daemonId, (current) =>
    current.pathWakeId === wake.id ? { ...current, pathWakeId: null } : null,
  )
  const queue = await openDaemonQueue(backend, daemonId)
  const event: DaemonWakeEvent = {
    kind: 'path_changed',
    wakeId: wake.id,
    dueAt: wake.dueAt,
    paths: payload.data.paths,
    morePaths: payload.data.morePaths,
  }
  await queue.trigger(event)
  return 'enqueued'
}
