import { randomBytes } from 'node:crypto'
import { type Backend, type Clock, isAgentStateError } from '@agent-state/core'
import { z } from 'zod'
import { wakeError } from '../shared/errors.js'
import { isValidId } from '../shared/ids.js'
import { topicWaiterKey, workerWakesKey } from '../shared/layout.js'
import type { ResumeConditions } from '../worker/resume-conditions.js'
import { nextCronOccurrence, type TriggerOccurrence } from './cron-trigger.js'
import { readStoredJson } from './stored-json.js'
import { registeredTriggerProvider } from './trigger-providers.js'
import { WAKE_ID_PATTERN, type WakeCause } from './wake-records.js'
import { cancelWake, getWake, registerWake } from './wake-registry.js'
import {
  parseWebhookTriggerConfig,
  readWebhookTrigger,
  registerWebhookTrigger,
} from './webhook-trigger.js'

/**
 * A suspended worker's resume conditions as wakes (docs/runtime/wakes.md,
 * Resume conditions): what `ResumeByPresets.localRuntime` registers, and
 * what a resume or close of the worker cancels.
 */

const WRITER = { writerId: 'agent-state/worker-wakes' }
const encoder = new TextEncoder()

/** A resume trigger id: `resume-` and 128 random bits; the Suspension's `autoResumeTrigger`. */
export const RESUME_TRIGGER_PATTERN = /^resume-[0-9a-f]{32}$/

/** The stored registration of one suspension's wakes, at `wakes/workers/<worker id>`. */
export const workerWakesSchema = z.strictObject({
  format: z.literal('agent-state/worker-wakes'),
  schemaVersion: z.literal(1),
  workerId: z.string().refine(isValidId),
  /** The Suspension's `autoResumeTrigger`: every wake below carries it in its payload. */
  triggerId: z.string().regex(RESUME_TRIGGER_PATTERN),
  /** The wakes registered at suspend (the timeout's); event wakes are registered by `publishEvent`. */
  wakeIds: z.array(z.string().regex(WAKE_ID_PATTERN)).max(8),
  /** The `onEvent` topic the worker waits on, or `null`. */
  topic: z.string().refine(isValidId).nullable(),
  registeredAt: z.int().nonnegative(),
})
/** See {@link workerWakesSchema}. */
export type WorkerWakes = z.infer<typeof workerWakesSchema>

/** What every worker wake's payload carries; the timeout's adds its action (and input). */
export const workerWakePayloadSchema = z.looseObject({
  triggerId: z.string().regex(RESUME_TRIGGER_PATTERN),
})

/** The marker of a worker waiting on a topic: which suspension waits. */
export const topicWaiterSchema = z.strictObject({
  workerId: z.string().refine(isValidId),
  triggerId: z.string().regex(RESUME_TRIGGER_PATTERN),
})

/**
 * What a trigger provider makes of a validated config at suspend: the wake
 * of its next occurrence (`cron`), and what else to store under the trigger
 * id (`webhook`: the trigger a call is checked against), written before the
 * registration.
 */
interface TriggerPlan {
  readonly occurrence: TriggerOccurrence | null
  readonly store?: (
    backend: Backend,
    ids: { workerId: string; triggerId: string; clock: Clock },
  ) => Promise<void>
}

/**
 * The built-in trigger providers: each validates its config (throwing
 * before anything is written) and returns its plan.
 */
const TRIGGER_PROVIDERS: Readonly<Record<string, (config: unknown, now: number) => TriggerPlan>> = {
  cron: (config, now) => ({ occurrence: nextCronOccurrence(config, now) }),
  webhook: (config) => {
    const parsed = parseWebhookTriggerConfig(config)
    return {
      occurrence: null,
      store: (backend, ids) => registerWebhookTrigger(backend, { ...ids, config: parsed }),
    }
  },
}

/** A registered third-party provider as a plan: its occurrence, with its name and details. */
function thirdPartyPlan(name: string): ((config: unknown, now: number) => TriggerPlan) | undefined {
  const provider = registeredTriggerProvider(name)
  if (provider === undefined) return undefined
  return (config, now) => {
    const { dueAt, details } = provider.next(config, now)
    return { occurrence: { dueAt, payload: { provider: name, details: details ?? null } } }
  }
}

/**
 * Registers the wakes of a suspension's conditions and returns its trigger
 * id. A timeout is a `timeout` wake due `durationMinutes` after `clock()`
 * (its payload: the trigger id, the action, the declared input); a `cron`
 * trigger (or a registered third-party provider's) a `schedule` wake at its next occurrence; a `webhook` trigger its
 * stored trigger (`wakes/webhooks/<trigger id>`, which a call to a
 * dispatcher's endpoint turns into a `webhook` wake); an `onEvent` topic is a
 * waiter marker that `publishEvent` turns into an `event` wake. An unknown
 * provider or an invalid trigger config throws before anything is written
 * (the caller reports `TRIGGER_REGISTRATION_FAILED`).
 *
 * Written before the suspended snapshot: if the suspend then fails, the wakes
 * name a trigger no Suspension carries, and the handler drops them.
 */
export async function registerWorkerWakes(
  backend: Backend,
  workerId: string,
  conditions: ResumeConditions,
  clock: Clock,
): Promise<string> {
  const trigger = conditions.trigger
  let plan: TriggerPlan | null = null
  if (trigger !== undefined) {
    const provider = Object.hasOwn(TRIGGER_PROVIDERS, trigger.provider)
      ? TRIGGER_PROVIDERS[trigger.provider]
      : thirdPartyPlan(trigger.provider)
    if (provider === undefined) {
      throw wakeError(
        'INVALID_WAKE',
        `No trigger provider named ${trigger.provider} is registered`,
        {
          path: 'trigger.provider',
          provider: trigger.provider,
        },
      )
    }
    plan = provider(trigger.config, clock())
  }
  const occurrence = plan?.occurrence ?? null
  const triggerId = `resume-${randomBytes(16).toString('hex')}`
  const wakeIds: string[] = []
  if (occurrence !== null) {
    const wake = await registerWake(backend, {
      target: { kind: 'worker', workerId },
      cause: 'schedule',
      dueAt: occurrence.dueAt,
      payload: { triggerId, ...occurrence.payload },
      clock,
    })
    wakeIds.push(wake.id)
  }
  const timeout = conditions.timeout
  if (timeout !== undefined) {
    const wake = await registerWake(backend, {
      target: { kind: 'worker', workerId },
      cause: 'timeout',
      dueAt: clock() + timeout.durationMinutes * 60_000,
      payload: {
        triggerId,
        onTimeout: timeout.onTimeout,
        durationMinutes: timeout.durationMinutes,
        ...(timeout.input === undefined ? {} : { input: timeout.input }),
      },
      clock,
    })
    wakeIds.push(wake.id)
  }
  const topic = conditions.onEvent ?? null
  if (topic !== null) {
    await backend.put(
      topicWaiterKey(topic, workerId),
      encoder.encode(JSON.stringify({ workerId, triggerId })),
      { writer: WRITER },
    )
  }
  // Before the registration: a registration naming the trigger implies its stored part exists.
  await plan?.store?.(backend, { workerId, triggerId, clock })
  const record: WorkerWakes = {
    format: 'agent-state/worker-wakes',
    schemaVersion: 1,
    workerId,
    triggerId,
    wakeIds,
    topic,
    registeredAt: clock(),
  }
  await backend.put(workerWakesKey(workerId), encoder.encode(JSON.stringify(record)), {
    writer: WRITER,
  })
  return triggerId
}

/** The stored registration of a worker's wakes, or `null`. @throws `EVENT_CORRUPT`. */
export async function readWorkerWakes(
  backend: Backend,
  workerId: string,
): Promise<WorkerWakes | null> {
  return readStoredJson(
    backend,
    workerWakesKey(workerId),
    workerWakesSchema,
    'Resume registration',
    (value) => value.workerId === workerId,
  )
}

/** A parked worker's next wake: what `agent-state workers` and the UI's worker view show. */
export interface WorkerNextWake {
  /** The earliest `pending` wake of the registration by due time, or `null` when none is pending. */
  readonly wake: {
    readonly wakeId: string
    readonly cause: WakeCause
    readonly dueAt: number
  } | null
  /** The `onEvent` topic the worker waits on (an event wakes it at its publish), or `null`. */
  readonly topic: string | null
  /**
   * Whether the suspension has a `webhook` trigger: a call to it wakes the worker (its wake is
   * registered by the call, so it has no due time before).
   */
  readonly webhook: boolean
}

/**
 * The next wake of a worker's resume registration (docs/runtime/wakes.md,
 * Resume conditions): the earliest pending one by due time among the wakes
 * registered at suspend (the timeout's, the trigger's), and the topic it
 * waits on. Ids sort by due time, so the records are read in that order and
 * the first pending one is the answer (at most the registration's few
 * reads). `null` when the worker has no registration (not parked by the
 * local runtime, or already woken). Event wakes registered by a publish are
 * due at once and not in the registration; a webhook trigger is `webhook`
 * (its stored trigger read under the registration's trigger id: one read).
 *
 * @throws `EVENT_CORRUPT` (the registration, the webhook trigger), `WAKE_NOT_FOUND`, `WAKE_CORRUPT` (a record).
 */
export async function nextWorkerWake(
  backend: Backend,
  workerId: string,
): Promise<WorkerNextWake | null> {
  const registration = await readWorkerWakes(backend, workerId)
  if (registration === null) return null
  const { topic } = registration
  const webhook = (await readWebhookTrigger(backend, registration.triggerId)) !== null
  for (const wakeId of [...registration.wakeIds].sort()) {
    const record = await getWake(backend, wakeId)
    if (record.state === 'pending') {
      return { wake: { wakeId, cause: record.cause, dueAt: record.dueAt }, topic, webhook }
    }
  }
  return { wake: null, topic, webhook }
}

/** What settling a suspension's wakes did to each wake it cancelled (or could not). */
export interface SettledWake {
  readonly wakeId: string
  /** `cancelled`; `fired` when a dispatcher fired it first; `busy` when one held it (its handler drops it). */
  readonly state: 'cancelled' | 'fired' | 'busy'
}

/**
 * Ends the suspension `triggerId` of a worker on the wake side: cancels its
 * wakes except `keep` (the one that fired, if any) with `reason`, removes its
 * topic waiter and its registration. Called once the worker left that
 * suspension (resumed, closed, timed out), under the worker's lease. A
 * registration of another suspension is left alone. It never waits for a
 * dispatcher: a wake a dispatcher holds is `busy`, and its handler finds the
 * worker no longer waiting under `triggerId` and drops it.
 */
export async function settleWorkerWakes(
  backend: Backend,
  workerId: string,
  triggerId: string,
  options: { keep: string | null; reason: string; clock: Clock },
): Promise<SettledWake[]> {
  const registration = await readWorkerWakes(backend, workerId)
  if (registration === null || registration.triggerId !== triggerId) return []
  const settled: SettledWake[] = []
  for (const wakeId of registration.wakeIds) {
    if (wakeId === options.keep) continue
    try {
      const after = await cancelWake(backend, wakeId, {
        reason: options.reason,
        waitMs: 0,
        clock: options.clock,
      })
      settled.push({ wakeId, state: after.state === 'fired' ? 'fired' : 'cancelled' })
    } catch (error) {
      if (!isAgentStateError(error, 'WAKE_BUSY')) throw error
      settled.push({ wakeId, state: 'busy' })
    }
  }
  if (registration.topic !== null) {
    await backend.delete(topicWaiterKey(registration.topic, workerId))
  }
  await backend.delete(workerWakesKey(workerId))
  return settled
}
