/**
 * The checks of worker-wakes.test.ts run against deliberately broken
 * runtimes: each mutant must make its check see the failure it exists to
 * catch. Each mutant replaces one module (vi.doMock) and imports the runtime
 * afresh.
 */

import type { Backend } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import type * as EventTopics from '../src/wake/event-topics.js'
import type { FiredWake as FiredWakeOf } from '../src/wake/wake-records.js'
import type * as WakeRegistry from '../src/wake/wake-registry.js'
import { getWake } from '../src/wake/wake-registry.js'
import type * as WorkerWakes from '../src/wake/worker-wakes.js'
import type * as ResumeWorker from '../src/worker/resume-worker.js'
import { mutated, unmockAll } from './mutants.js'
import { WAKE_BACKENDS } from './wake-scenarios.js'
import {
  badPayload,
  byHand,
  cronTrigger,
  eventBeforeDispatcher,
  nextWake,
  publishValidation,
  sameWorkerOneTick,
  staleWake,
  suspendValidation,
  thirdPartyTrigger,
  timeoutActions,
  timeoutRacesEvent,
} from './worker-wake-scenarios.js'

const WORKER_WAKES = '../src/wake/worker-wakes.ts'
const EVENT_TOPICS = '../src/wake/event-topics.ts'
const RESUME_WORKER = '../src/worker/resume-worker.ts'
const WORKER_LIFECYCLE = '../src/worker/worker-lifecycle.ts'
const WAKE_REGISTRY = '../src/wake/wake-registry.ts'
const CRON_TRIGGER = '../src/wake/cron-trigger.ts'
const IDS = '../src/shared/ids.ts'
const CANONICAL_JSON = '../src/shared/canonical-json.ts'
const SAME_TARGET = '../src/wake/same-target.ts'
const TRIGGER_PROVIDERS = '../src/wake/trigger-providers.ts'

afterEach(unmockAll)

/** Mutant: a resume or close that leaves the suspension's other wakes (and its topic waiter) in place. */
const noSiblingCancel = (original: Record<string, unknown>) => ({
  ...original,
  settleWorkerWakes: async () => [],
})

/**
 * Mutant: an event bus that only reaches a running dispatcher: the event is
 * stored, but no wake is registered for the workers waiting on the topic.
 */
const dropWithoutDispatcher = (original: Record<string, unknown>) => ({
  ...original,
  publishEvent: async (
    backend: Backend,
    topic: string,
    payload: unknown,
    options?: EventTopics.PublishEventOptions,
  ) => {
    // Publish to a topic nobody waits on: the event is stored, the waiters get nothing.
    const stored = await (original.publishEvent as typeof EventTopics.publishEvent)(
      backend,
      `${topic}.unheard`,
      payload,
      options,
    )
    return { ...stored, topic }
  },
})

/** Mutant: a wake resumes its worker whatever suspension the worker is in now. */
const noStaleCheck = (original: Record<string, unknown>) => ({
  ...original,
  resumeWorkerOnWake: (
    backend: Backend,
    workerId: string,
    options: ResumeWorker.ResumeWorkerOptions,
  ) => (original.resumeWorker as typeof ResumeWorker.resumeWorker)(backend, workerId, options),
})

/** Which of a registration's wakes a broken `nextWorkerWake` names, with its record. */
type WakePick = (
  backend: Backend,
  wakeIds: readonly string[],
) => Promise<{ wakeId: string; record: Awaited<ReturnType<typeof getWake>> } | null>

/** Mutant: `nextWorkerWake` naming the wake `pick` chooses (the registration read as the real one does). */
const nextWakeFrom = (pick: WakePick) => (original: Record<string, unknown>) => ({
  ...original,
  nextWorkerWake: async (backend: Backend, workerId: string) => {
    const registration = await (original.readWorkerWakes as typeof WorkerWakes.readWorkerWakes)(
      backend,
      workerId,
    )
    if (registration === null) return null
    const picked = await pick(backend, registration.wakeIds)
    return {
      wake:
        picked === null
          ? null
          : { wakeId: picked.wakeId, cause: picked.record.cause, dueAt: picked.record.dueAt },
      topic: registration.topic,
      // The webhook trigger is not read: a worker parked on one alone shows no way to wake.
      webhook: false,
    }
  },
})

/** The first pending wake in registration order, not due order. */
const firstPendingInRegistrationOrder: WakePick = async (backend, wakeIds) => {
  for (const wakeId of wakeIds) {
    const record = await getWake(backend, wakeId)
    if (record.state === 'pending') return { wakeId, record }
  }
  return null
}

/** The earliest wake by due time, pending or not. */
const earliestWhateverItsState: WakePick = async (backend, wakeIds) => {
  const [wakeId] = [...wakeIds].sort()
  return wakeId === undefined ? null : { wakeId, record: await getWake(backend, wakeId) }
}

describe.each(WAKE_BACKENDS)('resume-condition mutants on $name', (kind) => {
  it('a provider table that never finds a registered provider: the third-party check sees the suspend refused', async () => {
    const rt = await mutated(TRIGGER_PROVIDERS, (original) => ({
      ...original,
      registeredTriggerProvider: () => undefined,
    }))
    // worker-wakes.test.ts expects the worker parked and resumed at its occurrence.
    await expect(thirdPartyTrigger(rt, kind)).rejects.toMatchObject({
      code: 'TRIGGER_REGISTRATION_FAILED',
    })
  })

  it("a handler that reads a third party's occurrence as cron's: the third-party check sees the wake fail, the worker never resumed", async () => {
    const rt = await mutated('../src/wake/worker-wake-handler.ts', (original) => ({
      ...original,
      handleWorkerWake: async (backend: Backend, wake: FiredWakeOf, ...rest: unknown[]) => {
        const payload = wake.payload as Record<string, unknown>
        if (wake.cause === 'schedule' && payload.schedule === undefined) {
          throw Object.assign(new Error('not a cron payload'), { code: 'WAKE_CORRUPT' })
        }
        return (original.handleWorkerWake as (...args: unknown[]) => Promise<unknown>)(
          backend,
          wake,
          ...rest,
        )
      },
    }))
    const outcome = await thirdPartyTrigger(rt, kind)
    expect(outcome.atOccurrence).toEqual(['handler-failed'])
    expect(outcome.input).toBeNull()
  })

  it('a handler that fires without cancelling the sibling wakes: the event check sees the timeout wake not cancelled', async () => {
    const outcome = await eventBeforeDispatcher(await mutated(WORKER_WAKES, noSiblingCancel), kind)
    // worker-wakes.test.ts expects { state: 'cancelled', reason: 'worker resumed by wake ...' }.
    expect(outcome.timeout).toEqual({ state: 'fired', reason: null })
  })

  it('a resume by hand that leaves the wakes: the by-hand check sees them fire and the topic still wake', async () => {
    const outcome = await byHand(await mutated(WORKER_WAKES, noSiblingCancel), kind)
    // worker-wakes.test.ts expects both cancelled, publishAfter 0, tick [].
    expect(outcome).toMatchObject({
      resumedWake: { state: 'fired', reason: null },
      closedWake: { state: 'fired', reason: null },
      publishAfter: 1,
    })
    expect(outcome.tick).toContain('fired')
  })

  it('publishEvent that drops events while no dispatcher runs: the event check sees the worker woken only by its timeout', async () => {
    const outcome = await eventBeforeDispatcher(
      await mutated(EVENT_TOPICS, dropWithoutDispatcher),
      kind,
    )
    // worker-wakes.test.ts expects lateWakes 1 and the event as the resume input.
    expect(outcome.lateWakes).toBe(0)
    expect(outcome.input).toMatchObject({ kind: 'timeout' })
  })

  it('a wake that resumes whatever suspension the worker is in: the stale check sees a second resume', async () => {
    const outcome = await staleWake(await mutated(RESUME_WORKER, noStaleCheck), kind)
    // worker-wakes.test.ts expects the worker still parked on 'second', resumed once.
    expect(outcome).toMatchObject({ status: 'running', resumes: 2 })
  })

  it('a wake that resumes whatever suspension the worker is in: the race check sees both wakes resume it', async () => {
    const outcome = await timeoutRacesEvent(await mutated(RESUME_WORKER, noStaleCheck), kind)
    // worker-wakes.test.ts expects exactly one resume.
    expect(outcome.resumes).toBe(2)
  })

  it("a tick that runs one worker's wakes side by side (no same-target gate): the one-tick check sees the loser handler-failed, left undelivered", async () => {
    const rt = await mutated(SAME_TARGET, (original) => ({
      ...original,
      sameTargetGate: () => ({ enter: () => () => undefined, earlier: () => null }),
    }))
    const outcome = await sameWorkerOneTick(rt, kind)
    // worker-wakes.test.ts expects the loser archived or fired, and delivered.
    expect(outcome.tick).toContain('handler-failed')
    expect(outcome.states).toContain('fired')
  })

  it('onTimeout fail that does nothing: the timeout check sees the worker still suspended', async () => {
    const rt = await mutated(WORKER_LIFECYCLE, (original) => ({
      ...original,
      timeOutWorker: async () => true,
    }))
    const outcome = await timeoutActions(rt, kind)
    // worker-wakes.test.ts expects { status: 'closed', timedOut: true, resume: 'WORKER_CLOSED' }.
    expect(outcome.failed).toEqual({ status: 'suspended', timedOut: false, resume: 'none' })
  })

  it('a cron schedule read in UTC instead of its time zone: the cron check sees nothing at 03:00 in Paris', async () => {
    const rt = await mutated('cron-parser', (original) => {
      const parser = original.CronExpressionParser as {
        parse: (expression: string, options: Record<string, unknown>) => unknown
      }
      return {
        ...original,
        CronExpressionParser: {
          parse: (expression: string, options: Record<string, unknown>) =>
            parser.parse(expression, { ...options, tz: 'UTC' }),
        },
      }
    })
    const outcome = await cronTrigger(rt, kind)
    // worker-wakes.test.ts expects ['fired'] at 02:00 UTC.
    expect(outcome.atOccurrence).toEqual([])
  })

  it('a timeout due a minute early: the timeout check sees it fire before durationMinutes', async () => {
    const rt = await mutated(WAKE_REGISTRY, (original) => ({
      ...original,
      registerWake: (backend: Backend, options: WakeRegistry.RegisterWakeOptions) =>
        (original.registerWake as typeof WakeRegistry.registerWake)(backend, {
          ...options,
          dueAt: options.dueAt - 60_000,
        }),
    }))
    const outcome = await timeoutActions(rt, kind)
    // worker-wakes.test.ts expects nothing at 59 minutes.
    expect(outcome.early).toEqual(['fired', 'fired', 'fired'])
  })

  it('a give-up that skips the worker audit: the bad-payload check sees no wake_failed entry', async () => {
    const rt = await mutated(WORKER_LIFECYCLE, (original) => ({
      ...original,
      auditWakeFailure: async () => false,
    }))
    const outcome = await badPayload(rt, kind)
    // worker-wakes.test.ts expects audited true and a last entry wake_failed.
    expect(outcome).toMatchObject({ state: 'failed', failure: { audited: false } })
    expect(outcome.lastAudit?.event).not.toBe('wake_failed')
  })

  it('a next wake that takes the first registered wake: the next-wake check sees the schedule before the earlier timeout', async () => {
    const rt = await mutated(WORKER_WAKES, nextWakeFrom(firstPendingInRegistrationOrder))
    // worker-wakes.test.ts expects the timeout first.
    expect((await nextWake(rt, kind)).parked?.[0]).toBe('schedule')
  })

  it('a next wake that does not read the webhook trigger: the next-wake check sees the webhook worker with nothing to wake it', async () => {
    const rt = await mutated(WORKER_WAKES, nextWakeFrom(firstPendingInRegistrationOrder))
    // worker-wakes.test.ts expects [null, null, null, true].
    expect((await nextWake(rt, kind)).webhook).toEqual([null, null, null, false])
  })

  it('a next wake that ignores the state: the next-wake check sees the cancelled timeout still named', async () => {
    const rt = await mutated(WORKER_WAKES, nextWakeFrom(earliestWhateverItsState))
    // worker-wakes.test.ts expects the schedule once the timeout is cancelled.
    expect((await nextWake(rt, kind)).afterCancel?.[0]).toBe('timeout')
  })
})

describe('validation mutants', () => {
  it('a topic check that accepts any string: the publish and suspend checks see "a/b" accepted', async () => {
    const rt = await mutated(IDS, (original) => ({
      ...original,
      isValidId: (id: unknown) => typeof id === 'string' && id !== '',
    }))
    // worker-wakes.test.ts expects INVALID_EVENT_TOPIC and INVALID_RESUME_CONDITIONS:onEvent.
    expect((await publishValidation(rt))[1]).toBe('none')
    expect((await suspendValidation(rt))[3]).toBe('none')
  })

  it('a JSON check that accepts anything: the publish check sees a NaN payload stored', async () => {
    const rt = await mutated(CANONICAL_JSON, (original) => ({
      ...original,
      jsonValueSchema: z.any(),
    }))
    // worker-wakes.test.ts expects INVALID_EVENT_PAYLOAD.
    expect((await publishValidation(rt))[7]).toBe('none')
  })

  it('a size that measures nothing: the publish and suspend checks see payloads over the limit accepted', async () => {
    const rt = await mutated(CANONICAL_JSON, (original) => ({
      ...original,
      jsonByteLength: () => 0,
    }))
    // worker-wakes.test.ts expects EVENT_PAYLOAD_TOO_LARGE and INVALID_RESUME_CONDITIONS:timeout.input.
    expect((await publishValidation(rt))[8]).toBe('none')
    expect((await suspendValidation(rt))[2]).toBe('none')
  })

  it('a cron provider that reads an unknown time zone as UTC: the suspend check sees it registered', async () => {
    const rt = await mutated(CRON_TRIGGER, (original) => ({
      ...original,
      nextCronOccurrence: (config: { schedule: string; timeZone: string }, now: number) =>
        (original.nextCronOccurrence as (c: unknown, n: number) => unknown)(
          { ...config, timeZone: config.timeZone === 'Mars/Olympus' ? 'UTC' : config.timeZone },
          now,
        ),
    }))
    // worker-wakes.test.ts expects TRIGGER_REGISTRATION_FAILED at trigger.config.timeZone.
    expect((await suspendValidation(rt))[7]).toBe('none')
  })
})
