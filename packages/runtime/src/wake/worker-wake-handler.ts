import { type Backend, type Clock, isAgentStateError } from '@agent-state/core'
import { z } from 'zod'
import { type JsonValue, jsonValueSchema } from '../shared/canonical-json.js'
import { wakeError } from '../shared/errors.js'
import { TIMEOUT_ACTIONS } from '../worker/resume-conditions.js'
import { resumeWorkerOnWake } from '../worker/resume-worker.js'
import type { Worker } from '../worker/worker.js'
import { timeOutWorker } from '../worker/worker-lifecycle.js'
import type { WorkerRunOptions } from '../worker/worker-run.js'
import { getEvent } from './event-topics.js'
import type { FiredWake } from './wake-records.js'
import { workerWakePayloadSchema } from './worker-wakes.js'

/** What the dispatcher's built-in worker handler does with a resumed worker: the application's loop. */
export type WorkerResumedHandler = (worker: Worker, wake: FiredWake) => Promise<void> | void

/** The built-in worker handler's options (the dispatcher's `workers`); the single source of their types. */
export const workerWakeOptionsSchema = z.strictObject({
  /**
   * Called with the resumed worker (owned by this process, running) and the
   * wake. Return once the loop is started or done: the dispatcher waits for it
   * before the next wake. A rejection leaves the wake to be delivered again;
   * that delivery finds the worker already resumed by this wake and stops.
   */
  onResumed: z.custom<WorkerResumedHandler>(
    (value) => typeof value === 'function',
    'onResumed must be a function',
  ),
  /** The lease holder of resumed workers. Default the runtime's `<hostname>:<pid>:<random>`. */
  holder: z.string().min(1).max(256).optional(),
  /** Lease TTL of resumed workers. Default the worker default (5 minutes). */
  leaseTtlMs: z.int().min(1).optional(),
  /**
   * Reopen the run a woken worker owns (`worker.openRun`) as part of its
   * resume, as `resumeWorker`'s `run` does: `onResumed` gets `worker.run`
   * already open and reconciled, and a run that cannot be reopened fails the
   * resume, so the wake is delivered again. Without it, `onResumed` calls
   * `worker.reopenRun` itself.
   */
  run: z
    .custom<WorkerRunOptions>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        typeof (value as { handlers?: unknown }).handlers === 'object',
      'run must be { handlers, revalidate? }',
    )
    .optional(),
})
/** See {@link workerWakeOptionsSchema}. */
export type WorkerWakeOptions = z.input<typeof workerWakeOptionsSchema>

/** What the built-in handler did with a worker wake. */
export type WorkerWakeResult = 'resumed' | 'timed-out' | 'stale'

const timeoutPayloadSchema = workerWakePayloadSchema.extend({
  onTimeout: z.enum(TIMEOUT_ACTIONS),
  durationMinutes: z.int().positive(),
})
const schedulePayloadSchema = workerWakePayloadSchema.extend({ provider: z.string() })
const cronPayloadSchema = schedulePayloadSchema.extend({
  schedule: z.string(),
  timeZone: z.string(),
})
const thirdPartyPayloadSchema = schedulePayloadSchema.extend({ details: jsonValueSchema })
const eventPayloadSchema = workerWakePayloadSchema.extend({
  topic: z.string(),
  eventId: z.string(),
})

/** The wake's payload as `schema` reads it; anything else is `WAKE_CORRUPT` (the runtime wrote it). */
function payloadOf<T>(schema: z.ZodType<T>, wake: FiredWake): T {
  const parsed = schema.safeParse(wake.payload)
  if (!parsed.success) {
    throw wakeError('WAKE_CORRUPT', `The payload of worker wake ${wake.id} fails its schema`, {
      wakeId: wake.id,
      cause: wake.cause,
    })
  }
  return parsed.data
}

/**
 * The dispatcher's default handler of a worker's wake (docs/runtime/wakes.md,
 * Resume conditions). A `timeout` acts per its `onTimeout`: `fail` closes
 * the worker (audited `timed_out`); `resume_with_summary` resumes it with
 * `{ kind: 'timeout', summary, durationMinutes, wakeId }`;
 * `resume_with_input` with the input declared at suspend. An `event` resumes
 * it with `{ kind: 'event', topic, eventId, publishedAt, payload, wakeId }`;
 * a `schedule` (a `cron` trigger's occurrence) with `{ kind: 'schedule',
 * provider, schedule, timeZone, occurrence, wakeId }` (a third-party
 * provider's: `{ kind: 'schedule', provider, details, occurrence, wakeId }`); a `webhook` call with
 * `{ kind: 'webhook', body, receivedAt, wakeId }` (`body` the posted JSON).
 * The resume's `cause` is `wake:<id>`, and the suspension's other wakes are
 * cancelled.
 *
 * A wake for a worker no longer in the suspension it was registered for
 * (resumed or closed meanwhile, or another of its wakes won) is `stale`:
 * nothing happens. `CONCURRENT_RESUME` (someone is resuming it right now)
 * is thrown, so the wake is delivered again after its lease and then finds
 * the outcome.
 */
export async function handleWorkerWake(
  backend: Backend,
  wake: FiredWake,
  options: z.output<typeof workerWakeOptionsSchema>,
  clock: Clock,
): Promise<WorkerWakeResult> {
  if (wake.target.kind !== 'worker') return 'stale'
  const { workerId } = wake.target
  const owner = {
    clock,
    ...(options.holder === undefined ? {} : { holder: options.holder }),
    ...(options.leaseTtlMs === undefined ? {} : { leaseTtlMs: options.leaseTtlMs }),
  }
  let input: JsonValue
  let triggerId: string
  if (wake.cause === 'timeout') {
    const payload = payloadOf(timeoutPayloadSchema, wake)
    triggerId = payload.triggerId
    const of = { wakeId: wake.id, triggerId, durationMinutes: payload.durationMinutes }
    if (payload.onTimeout === 'fail') {
      return (await stale(() => timeOutWorker(backend, workerId, owner, of)))
        ? 'timed-out'
        : 'stale'
    }
    input =
      payload.onTimeout === 'resume_with_input'
        ? ((payload.input ?? null) as JsonValue)
        : {
            kind: 'timeout',
            summary: `No other resume condition was met within ${payload.durationMinutes} minutes; the timeout woke the worker.`,
            durationMinutes: payload.durationMinutes,
            wakeId: wake.id,
          }
  } else if (wake.cause === 'event') {
    const payload = payloadOf(eventPayloadSchema, wake)
    triggerId = payload.triggerId
    const event = await getEvent(backend, payload.topic, payload.eventId)
    input = {
      kind: 'event',
      topic: event.topic,
      eventId: event.eventId,
      publishedAt: event.publishedAt,
      payload: event.payload,
      wakeId: wake.id,
    }
  } else if (
    wake.cause === 'schedule' &&
    payloadOf(schedulePayloadSchema, wake).provider === 'cron'
  ) {
    const payload = payloadOf(cronPayloadSchema, wake)
    triggerId = payload.triggerId
    input = {
      kind: 'schedule',
      provider: payload.provider,
      schedule: payload.schedule,
      timeZone: payload.timeZone,
      occurrence: new Date(wake.dueAt).toISOString(),
      wakeId: wake.id,
    }
  } else if (wake.cause === 'schedule') {
    // A third-party provider's occurrence (trigger-providers.ts): its details as it computed them.
    const payload = payloadOf(thirdPartyPayloadSchema, wake)
    triggerId = payload.triggerId
    input = {
      kind: 'schedule',
      provider: payload.provider,
      details: payload.details as JsonValue,
      occurrence: new Date(wake.dueAt).toISOString(),
      wakeId: wake.id,
    }
  } else if (wake.cause === 'webhook') {
    const payload = payloadOf(eventPayloadSchema, wake)
    triggerId = payload.triggerId
    // The call's body is stored as an event on the trigger's own topic (webhook-calls.ts).
    const call = await getEvent(backend, payload.topic, payload.eventId)
    input = { kind: 'webhook', body: call.payload, receivedAt: call.publishedAt, wakeId: wake.id }
  } else {
    return 'stale'
  }
  const worker = await stale(() =>
    resumeWorkerOnWake(
      backend,
      workerId,
      {
        ...owner,
        input,
        cause: `wake:${wake.id}`,
        ...(options.run === undefined ? {} : { run: options.run }),
      },
      {
        wakeId: wake.id,
        triggerId,
      },
    ),
  )
  if (worker === false) return 'stale'
  await options.onResumed(worker, wake)
  return 'resumed'
}

/** `run()`'s result, or `false` when the worker is no longer in the wake's suspension. */
async function stale<T>(run: () => Promise<T>): Promise<T | false> {
  try {
    return await run()
  } catch (error) {
    if (
      isAgentStateError(error, 'WORKER_NOT_SUSPENDED') ||
      isAgentStateError(error, 'WORKER_CLOSED') ||
      isAgentStateError(error, 'SNAPSHOT_MISSING')
    ) {
      return false
    }
    throw error
  }
}
