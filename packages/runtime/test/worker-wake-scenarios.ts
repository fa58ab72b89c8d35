/**
 * Resume conditions that fire (docs/runtime/wakes.md, Resume conditions) as
 * scenarios that return what they saw: worker-wakes.test.ts expects the
 * correct outcome of each, worker-wake-mutants.test.ts runs them against
 * deliberately broken runtimes and expects the failure each exists to catch.
 * Memory and the filesystem with a manual clock that moves due times, wake
 * leases and worker leases alike (no real waiting).
 */

import type { Backend, ManualClock } from '@agent-state/core'
import type { FiredWake, Worker } from '../src/index.js'
import type { Runtime } from './wake-scenarios.js'
import { T0, WAKE_BACKENDS, type WakeBackendKind, withStorage } from './wake-scenarios.js'

const MINUTE = 60_000
/** Validation does not depend on the backend: it runs on memory only. */
const WAKE_BACKEND_MEMORY = WAKE_BACKENDS[0] as WakeBackendKind

/** The code of what `run` threw, or `'none'`. */
async function codeOf(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
    return 'none'
  } catch (error) {
    return (error as { code?: string }).code ?? String(error)
  }
}

/** A worker started and parked with `conditions`, by the default resume owner. */
async function park(
  rt: Runtime,
  backend: Backend,
  clock: ManualClock,
  workerId: string,
  conditions: unknown,
) {
  const worker = await rt.startWorker(backend, { workerId, clock: clock.now, holder: 'app' })
  return worker.suspend({ reason: `${workerId} waits`, conditions })
}

/** The worker's audit events. */
async function auditOf(rt: Runtime, backend: Backend, workerId: string): Promise<string[]> {
  return (await rt.inspectWorker(backend, workerId)).audit.map((entry) => entry.event)
}

function dispatcher(
  rt: Runtime,
  backend: Backend,
  clock: ManualClock,
  onResumed: (worker: Worker, wake: FiredWake) => Promise<void>,
  dispatcherId = 'dispatcher',
) {
  return rt.startWakeDispatcher(backend, {
    handlers: {},
    workers: { onResumed, holder: dispatcherId },
    clock: clock.now,
    dispatcherId,
    leaseTtlMs: 1_000,
    intervalMs: null,
  })
}

/** What the timeout scenario saw. */
export interface TimeoutOutcome {
  /** autoResumeTrigger matches the registration and the Suspension names the local runtime. */
  readonly registered: boolean
  /** Outcomes of the tick one minute before the timeout. */
  readonly early: readonly string[]
  /** Outcomes of the tick at the timeout. */
  readonly atTimeout: readonly string[]
  /** Per resumed worker: its input and the resume cause. */
  readonly resumed: Readonly<Record<string, unknown>>
  /** The code of a second resume of a worker the dispatcher's handle owns. */
  readonly secondResume: string
  /** The failed worker: its status, audit, and the code of resuming it. */
  readonly failed: { status: string; timedOut: boolean; resume: string }
}

/**
 * Three workers park with a 60-minute timeout, one per action. The
 * dispatcher's tick at 59 minutes fires nothing; the one at 60 minutes
 * resumes two (with the summary, with the declared input) and closes the
 * third (audited `timed_out`). While the dispatcher's handle owns a resumed
 * worker, another resume is `CONCURRENT_RESUME`.
 */
export async function timeoutActions(rt: Runtime, kind: WakeBackendKind): Promise<TimeoutOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const summary = await park(rt, backend, clock, 'w-summary', {
      timeout: { durationMinutes: 60 },
    })
    await park(rt, backend, clock, 'w-input', {
      timeout: { durationMinutes: 60, onTimeout: 'resume_with_input', input: { choice: 'b' } },
    })
    await park(rt, backend, clock, 'w-fail', {
      timeout: { durationMinutes: 60, onTimeout: 'fail' },
    })
    const registration = await rt.readWorkerWakes(backend, 'w-summary')
    const registered =
      summary.resumeByMechanism === 'ResumeBy.local_runtime' &&
      summary.autoResumeTrigger === registration?.triggerId &&
      registration.wakeIds.length === 1
    const resumed: Record<string, unknown> = {}
    let secondResume = 'not tried'
    const running = dispatcher(rt, storage.open(), clock, async (worker, wake) => {
      const entry = worker.audit.findLast((e) => e.event === 'worker_resumed')
      resumed[worker.workerId] = { input: worker.resumeInput, cause: entry?.detail.cause }
      if (worker.workerId === 'w-summary') {
        secondResume = await codeOf(() => rt.resumeWorker(storage.open(), 'w-summary'))
      }
      // The wake id reaches the resumed worker.
      if (!JSON.stringify(worker.resumeInput).includes(wake.id) && worker.workerId !== 'w-input') {
        throw new Error('the resume input does not name the wake')
      }
      await worker.complete({ woke: wake.id })
    })
    clock.advance(59 * MINUTE)
    const early = (await running.tick()).outcomes.map((o) => o.outcome)
    clock.advance(MINUTE)
    const atTimeout = (await running.tick()).outcomes.map((o) => o.outcome)
    await running.stop()
    const failedBody = await rt.inspectWorker(backend, 'w-fail')
    return {
      registered,
      early,
      atTimeout,
      resumed,
      secondResume,
      failed: {
        status: failedBody.status,
        timedOut: failedBody.audit.some((entry) => entry.event === 'timed_out'),
        resume: await codeOf(() => rt.resumeWorker(backend, 'w-fail')),
      },
    }
  })
}

/** What the event scenario saw. */
export interface EventOutcome {
  /** Wakes registered by the publish before the worker parked. */
  readonly earlyWakes: number
  /** Wakes registered by the publish while no dispatcher ran. */
  readonly lateWakes: number
  /** The resumed worker's input (the second event). */
  readonly input: unknown
  /** The timeout's wake after the event won. */
  readonly timeout: { state: string; reason: string | null }
  readonly audit: readonly string[]
}

/**
 * An event is published on a topic before the worker parks (it must not
 * wake it), then the worker parks with `onEvent` and a timeout, then a second
 * event is published while no dispatcher runs. A dispatcher started after
 * both resumes the worker with the second event, and the timeout's wake is
 * cancelled naming the event's wake.
 */
export async function eventBeforeDispatcher(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<EventOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    const early = await rt.publishEvent(backend, 'fix-chosen', { fix: 'old' }, { clock: clock.now })
    clock.advance(1_000)
    await park(rt, backend, clock, 'w1', {
      onEvent: 'fix-chosen',
      timeout: { durationMinutes: 30 },
    })
    const timeoutId = (await rt.readWorkerWakes(backend, 'w1'))?.wakeIds[0] ?? ''
    clock.advance(1_000)
    const late = await rt.publishEvent(backend, 'fix-chosen', { fix: 'new' }, { clock: clock.now })
    clock.advance(5 * MINUTE)
    let input: unknown = null
    const running = dispatcher(rt, storage.open(), clock, async (worker) => {
      input = worker.resumeInput
      await worker.complete()
    })
    await running.tick()
    clock.advance(30 * MINUTE)
    await running.tick()
    await running.stop()
    const timeout = await rt.getWake(backend, timeoutId)
    return {
      earlyWakes: early.wakeIds.length,
      lateWakes: late.wakeIds.length,
      input,
      timeout: { state: timeout.state, reason: timeout.cancellation?.reason ?? null },
      audit: await auditOf(rt, backend, 'w1'),
    }
  })
}

/** What the by-hand scenario saw. */
export interface ByHandOutcome {
  /** The timeout wakes of the worker resumed by hand and of the one closed by hand. */
  readonly resumedWake: { state: string; reason: string | null }
  readonly closedWake: { state: string; reason: string | null }
  /** Wakes a publish on the resumed worker's topic registered afterwards. */
  readonly publishAfter: number
  readonly resumedAudit: readonly string[]
  readonly closedAudit: readonly string[]
  /** Outcomes of a dispatcher tick after both timeouts passed. */
  readonly tick: readonly string[]
}

/**
 * Two workers park with a timeout (one also on a topic); one is resumed by
 * hand, the other closed by hand. Their timeout wakes are cancelled (with the
 * reason) and audited, the topic no longer wakes anyone, and a dispatcher
 * ticking after the timeouts fires nothing.
 */
export async function byHand(rt: Runtime, kind: WakeBackendKind): Promise<ByHandOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w-resumed', {
      timeout: { durationMinutes: 10 },
      onEvent: 'approvals',
    })
    await park(rt, backend, clock, 'w-closed', { timeout: { durationMinutes: 10 } })
    const resumedId = (await rt.readWorkerWakes(backend, 'w-resumed'))?.wakeIds[0] ?? ''
    const closedId = (await rt.readWorkerWakes(backend, 'w-closed'))?.wakeIds[0] ?? ''
    clock.advance(MINUTE)
    const worker = await rt.resumeWorker(storage.open(), 'w-resumed', { clock: clock.now })
    await rt.closeWorker(storage.open(), 'w-closed', { clock: clock.now })
    const publishAfter = (await rt.publishEvent(backend, 'approvals', 1, { clock: clock.now }))
      .wakeIds.length
    await worker.complete()
    clock.advance(20 * MINUTE)
    const running = dispatcher(rt, storage.open(), clock, async () => {
      throw new Error('nothing should be resumed')
    })
    const tick = (await running.tick()).outcomes.map((o) => o.outcome)
    await running.stop()
    const view = async (id: string) => {
      const wake = await rt.getWake(backend, id)
      return { state: wake.state, reason: wake.cancellation?.reason ?? null }
    }
    return {
      resumedWake: await view(resumedId),
      closedWake: await view(closedId),
      publishAfter,
      resumedAudit: await auditOf(rt, backend, 'w-resumed'),
      closedAudit: await auditOf(rt, backend, 'w-closed'),
      tick,
    }
  })
}

/** What the race scenario saw. */
export interface RaceOutcome {
  /** How many times the worker was resumed (`worker_resumed` audit entries). */
  readonly resumes: number
  /** The resume's cause names one of the two wakes. */
  readonly causeIsAWake: boolean
  /** The worker's state at the end: parked again, waiting on `later`. */
  readonly status: string
  readonly waitsOn: string | null
  /** Wakes of the two still pending, and tick errors. */
  readonly pending: number
  readonly errors: number
}

/**
 * A timeout racing an event: the worker parks with a 10-minute timeout and a
 * topic; an event is published 1 ms after the timeout comes due, and two dispatchers
 * tick at the same moment. Whoever resumes the worker parks it again (a loop
 * that runs one turn and waits for the next event). Then both tick again past
 * the wake leases. Exactly one of the two wakes resumes the worker.
 */
export async function timeoutRacesEvent(rt: Runtime, kind: WakeBackendKind): Promise<RaceOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w1', { timeout: { durationMinutes: 10 }, onEvent: 'go' })
    const timeoutId = (await rt.readWorkerWakes(backend, 'w1'))?.wakeIds[0] ?? ''
    clock.advance(10 * MINUTE)
    // 1 ms after the timeout: the timeout wake is the earlier-due, so a dispatcher meeting both
    // fires it first and the event's wake (not in the registration, never cancelled) after it:
    // without the stale check it would resume the re-parked worker, in one dispatcher or two.
    clock.advance(1)
    const event = await rt.publishEvent(backend, 'go', { n: 1 }, { clock: clock.now })
    const ids = [timeoutId, ...event.wakeIds]
    const onResumed = async (worker: Worker) => {
      await worker.suspend({ reason: 'next turn', conditions: { onEvent: 'later' } })
    }
    const dispatchers = ['a', 'b'].map((id) =>
      dispatcher(rt, storage.open(), clock, onResumed, `dispatcher-${id}`),
    )
    let errors = 0
    const reports = await Promise.all(dispatchers.map((d) => d.tick()))
    clock.advance(2_000)
    reports.push(...(await Promise.all(dispatchers.map((d) => d.tick()))))
    for (const report of reports) errors += report.errors.length
    await Promise.all(dispatchers.map((d) => d.stop()))
    const body = await rt.inspectWorker(backend, 'w1')
    const resumes = body.audit.filter((entry) => entry.event === 'worker_resumed')
    let pending = 0
    for (const id of ids) if ((await rt.getWake(backend, id)).state === 'pending') pending++
    return {
      resumes: resumes.length,
      causeIsAWake: ids.some((id) => resumes[0]?.detail.cause === `wake:${id}`),
      status: body.status,
      waitsOn: body.conditions?.onEvent ?? null,
      pending,
      errors,
    }
  })
}

/** What the one-tick scenario saw. */
export interface OneTickOutcome {
  /** The tick's outcomes, sorted (their due order is random: the two wakes are due together). */
  readonly tick: readonly string[]
  /** The two wakes' states after the tick, sorted, with `+delivered` on a delivered fired one. */
  readonly states: readonly string[]
  /** How many times the worker was resumed. */
  readonly resumes: number
}

/**
 * Two wakes of one worker due in one tick of one dispatcher: the worker
 * parks with a 10-minute timeout and a topic, an event is published as the
 * timeout comes due, one tick. The woken loop holds the worker 200 ms of
 * real time and parks it again on another topic (wide enough for the other
 * wake to meet the resumed worker if both ran side by side). The other wake
 * must be finished by the same tick: cancelled by the winner's resume, or
 * delivered and dropped as stale, never `handler-failed` (left to wait out
 * the firing lease).
 */
export async function sameWorkerOneTick(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<OneTickOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w1', { timeout: { durationMinutes: 10 }, onEvent: 'go' })
    const timeoutId = (await rt.readWorkerWakes(backend, 'w1'))?.wakeIds[0] ?? ''
    clock.advance(10 * MINUTE)
    const event = await rt.publishEvent(backend, 'go', { n: 1 }, { clock: clock.now })
    const one = dispatcher(rt, storage.open(), clock, async (worker) => {
      await new Promise((resolve) => setTimeout(resolve, 200))
      await worker.suspend({ reason: 'next turn', conditions: { onEvent: 'later' } })
    })
    const report = await one.tick()
    await one.stop()
    const states: string[] = []
    for (const id of [timeoutId, ...event.wakeIds]) {
      const wake = await rt.getWake(backend, id)
      states.push(
        wake.state === 'fired' && wake.delivery?.deliveredAt != null
          ? 'fired+delivered'
          : wake.state,
      )
    }
    const body = await rt.inspectWorker(backend, 'w1')
    return {
      tick: report.outcomes.map((entry) => entry.outcome).sort(),
      states: states.sort(),
      resumes: body.audit.filter((entry) => entry.event === 'worker_resumed').length,
    }
  })
}

/** What the stale-wake scenario saw. */
export interface StaleOutcome {
  /** Outcomes of the tick. */
  readonly tick: readonly string[]
  readonly status: string
  readonly waitsOn: string | null
  readonly resumes: number
}

/**
 * A wake that outlived its suspension: an event wakes a parked worker while
 * no dispatcher runs, the worker is resumed by hand and parks again waiting
 * on another topic. The dispatcher then fires the old event wake: the worker
 * must stay parked on the new topic (the wake is delivered and dropped).
 */
export async function staleWake(rt: Runtime, kind: WakeBackendKind): Promise<StaleOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w1', { onEvent: 'first' })
    await rt.publishEvent(backend, 'first', 'hello', { clock: clock.now })
    const worker = await rt.resumeWorker(storage.open(), 'w1', { clock: clock.now })
    await worker.suspend({ reason: 'again', conditions: { onEvent: 'second' } })
    clock.advance(MINUTE)
    const running = dispatcher(rt, storage.open(), clock, async () => undefined)
    const tick = (await running.tick()).outcomes.map((o) => o.outcome)
    await running.stop()
    const body = await rt.inspectWorker(backend, 'w1')
    return {
      tick,
      status: body.status,
      waitsOn: body.conditions?.onEvent ?? null,
      resumes: body.audit.filter((entry) => entry.event === 'worker_resumed').length,
    }
  })
}

/** What the cron scenario saw. */
export interface CronOutcome {
  /** Outcomes of the tick a minute before 03:00 in Paris, and at it. */
  readonly early: readonly string[]
  readonly atOccurrence: readonly string[]
  readonly input: unknown
  /** The suspension's timeout wake after the schedule won. */
  readonly timeout: string
}

/**
 * A worker parks at 08:00 UTC on 15 January 2027 with a `cron` trigger
 * `0 3 * * *` in `Europe/Paris` (UTC+1 in winter) and a 24-hour timeout.
 * Nothing fires at 01:59 UTC the next day; at 02:00 UTC (03:00 in Paris) the
 * schedule resumes the worker and the timeout's wake is cancelled.
 */
export async function cronTrigger(rt: Runtime, kind: WakeBackendKind): Promise<CronOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w1', {
      trigger: { provider: 'cron', config: { schedule: '0 3 * * *', timeZone: 'Europe/Paris' } },
      timeout: { durationMinutes: 24 * 60 },
    })
    const registration = await rt.readWorkerWakes(backend, 'w1')
    let input: unknown = null
    const running = dispatcher(rt, storage.open(), clock, async (worker) => {
      input = worker.resumeInput
      await worker.complete()
    })
    clock.set(Date.parse('2027-01-16T01:59:00Z'))
    const early = (await running.tick()).outcomes.map((o) => o.outcome)
    clock.set(Date.parse('2027-01-16T02:00:00Z'))
    const atOccurrence = (await running.tick()).outcomes.map((o) => o.outcome)
    await running.stop()
    const states: string[] = []
    for (const id of registration?.wakeIds ?? []) {
      const wake = await rt.getWake(backend, id)
      if (wake.cause === 'timeout') states.push(wake.state)
    }
    return { early, atOccurrence, input, timeout: states.join(',') }
  })
}

/** `code:context.path` of what `run` threw (the cause's path for a registration failure), or `none`. */
async function failureOf(run: () => Promise<unknown>): Promise<string> {
  try {
    await run()
    return 'none'
  } catch (error) {
    const { code, context, cause } = error as {
      code?: string
      context?: { path?: string }
      cause?: { context?: { path?: string } }
    }
    const path =
      code === 'TRIGGER_REGISTRATION_FAILED' ? cause?.context?.path : (context?.path ?? '')
    return `${code}:${path ?? ''}`
  }
}

/** Invalid publishes, each as `code:path`: six topics, two payloads, one a byte over the limit. */
export async function publishValidation(rt: Runtime): Promise<string[]> {
  return withStorage(WAKE_BACKEND_MEMORY, async (storage) => {
    const backend = storage.open()
    const codes: string[] = []
    for (const topic of ['', 'a/b', '../x', '.as~x', 'x'.repeat(129), 7]) {
      codes.push(await failureOf(() => rt.publishEvent(backend, topic as string, 1)))
    }
    codes.push(await failureOf(() => rt.publishEvent(backend, 't', undefined)))
    codes.push(await failureOf(() => rt.publishEvent(backend, 't', { a: [1, Number.NaN] })))
    // The JSON string's two quotes count: limit - 1 characters are one byte over.
    const limit = rt.MAX_EVENT_PAYLOAD_BYTES
    codes.push(await failureOf(() => rt.publishEvent(backend, 't', 'x'.repeat(limit - 1))))
    codes.push(await failureOf(() => rt.publishEvent(backend, 't', 'x'.repeat(limit - 2))))
    return codes
  })
}

/**
 * Invalid suspends of one running worker, each as `code:path`, then its
 * status and whether anything was registered.
 */
export async function suspendValidation(rt: Runtime): Promise<string[]> {
  return withStorage(WAKE_BACKEND_MEMORY, async (storage) => {
    const backend = storage.open()
    const worker = await rt.startWorker(backend, { workerId: 'w1' })
    const suspend = (conditions: unknown) => () => worker.suspend({ reason: 'r', conditions })
    const cron = (config: unknown) => suspend({ trigger: { provider: 'cron', config } })
    const cases: Array<() => Promise<unknown>> = [
      suspend({ timeout: { durationMinutes: 1, onTimeout: 'resume_with_input' } }),
      suspend({ timeout: { durationMinutes: 1, input: 'x' } }),
      suspend({
        timeout: {
          durationMinutes: 1,
          onTimeout: 'resume_with_input',
          input: 'x'.repeat(rt.MAX_TIMEOUT_INPUT_BYTES - 1),
        },
      }),
      suspend({ onEvent: 'a/b' }),
      suspend({ timeout: { durationMinutes: rt.MAX_TIMEOUT_MINUTES + 1 } }),
      suspend({ trigger: { provider: 'github' }, onEvent: 'x' }),
      cron({ schedule: '0 3 * * *' }),
      cron({ schedule: '0 3 * * *', timeZone: 'Mars/Olympus' }),
      cron({ schedule: '61 3 * * *', timeZone: 'UTC' }),
      cron({ schedule: 'whenever', timeZone: 'UTC' }),
      cron({ schedule: '0 3 * * *', timeZone: 'UTC', at: 1 }),
    ]
    const codes: string[] = []
    for (const run of cases) codes.push(await failureOf(run))
    codes.push(worker.status)
    codes.push(
      (await rt.readWorkerWakes(backend, 'w1')) === null ? 'nothing registered' : 'registered',
    )
    return codes
  })
}

/** What the bad-payload scenario saw. */
export interface BadPayloadOutcome {
  /** The timeout wake's outcome on each tick (each after the wake lease's TTL). */
  readonly ticks: readonly (string | undefined)[]
  /** The wake record's state and failure at the end. */
  readonly state: string
  readonly failure: unknown
  /** The worker at the end: its status and its last audit entry. */
  readonly status: string
  readonly lastAudit: { event: string; detail: unknown } | undefined
}

/**
 * A worker parks with a 60-minute timeout whose wake payload is then
 * rewritten with an action the handler cannot read (a record written by
 * another version, a hand edit). A dispatcher with `maxAttempts: 2` ticks
 * at the timeout and twice more, each after the lease TTL: the first
 * delivery fails (`WAKE_CORRUPT`), the second gives the wake up (recorded
 * `failed`, audited `wake_failed` on the worker, which stays parked), the
 * third finds nothing to do.
 */
export async function badPayload(rt: Runtime, kind: WakeBackendKind): Promise<BadPayloadOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w1', { timeout: { durationMinutes: 60 } })
    const [wakeId] = (await rt.readWorkerWakes(backend, 'w1'))?.wakeIds ?? []
    if (wakeId === undefined) throw new Error('no timeout wake registered')
    const key = `wakes/records/${wakeId}`
    const stored = await backend.get(key)
    if (stored === null) throw new Error('no wake record')
    const record = JSON.parse(new TextDecoder().decode(stored.value))
    record.payload = { triggerId: record.payload.triggerId, onTimeout: 'explode' }
    await backend.put(key, new TextEncoder().encode(JSON.stringify(record)), {
      ifMatch: stored.meta.version,
    })
    const running = rt.startWakeDispatcher(storage.open(), {
      handlers: {},
      workers: { onResumed: async () => undefined, holder: 'dispatcher' },
      clock: clock.now,
      dispatcherId: 'dispatcher',
      leaseTtlMs: 1_000,
      intervalMs: null,
      maxAttempts: 2,
    })
    clock.advance(60 * MINUTE)
    const ticks: (string | undefined)[] = []
    for (let i = 0; i < 3; i++) {
      ticks.push((await running.tick()).outcomes.find((o) => o.wakeId === wakeId)?.outcome)
      clock.advance(1_001)
    }
    await running.stop()
    const after = await rt.getWake(backend, wakeId)
    const body = await rt.inspectWorker(backend, 'w1')
    const last = body.audit.at(-1)
    return {
      ticks,
      state: after.state,
      failure: after.failure,
      status: body.status,
      lastAudit: last === undefined ? undefined : { event: last.event, detail: last.detail },
    }
  })
}

/** What the next-wake scenario saw: `[cause, dueAt, topic]` of each read, or `null`. */
export interface NextWakeOutcome {
  /** Parked with a schedule (registered first, due tomorrow), a 1-minute timeout and a topic. */
  readonly parked: readonly [string | null, number | null, string | null, boolean] | null
  /** After the timeout's wake was cancelled by hand. */
  readonly afterCancel: readonly [string | null, number | null, string | null, boolean] | null
  /** A running worker (no registration). */
  readonly running: null | object
  /** A worker parked on a webhook trigger alone. */
  readonly webhook: readonly [string | null, number | null, string | null, boolean] | null
}

/**
 * `nextWorkerWake` of a worker parked at T0 with a `cron` trigger `0 3 * * *`
 * in UTC (registered first, due at 03:00 the next day), a 1-minute timeout
 * and `onEvent`: the timeout (the earliest pending wake by due time), then,
 * once that wake is cancelled, the schedule; a running worker has none; a
 * worker parked on a webhook trigger alone has no pending wake and `webhook`.
 */
export async function nextWake(rt: Runtime, kind: WakeBackendKind): Promise<NextWakeOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const backend = storage.open()
    await park(rt, backend, clock, 'w1', {
      trigger: { provider: 'cron', config: { schedule: '0 3 * * *', timeZone: 'UTC' } },
      timeout: { durationMinutes: 1 },
      onEvent: 'fix-chosen',
    })
    await rt.startWorker(backend, { workerId: 'w2', clock: clock.now, holder: 'app' })
    await park(rt, backend, clock, 'w3', { trigger: rt.createWebhookTrigger().trigger })
    const read = async (workerId: string) => {
      const next = await rt.nextWorkerWake(backend, workerId)
      return next === null
        ? null
        : ([
            next.wake?.cause ?? null,
            next.wake?.dueAt ?? null,
            next.topic,
            next.webhook === true,
          ] as const)
    }
    const parked = await read('w1')
    const registration = await rt.readWorkerWakes(backend, 'w1')
    for (const wakeId of registration?.wakeIds ?? []) {
      if ((await rt.getWake(backend, wakeId)).cause === 'timeout') {
        await rt.cancelWake(backend, wakeId, { clock: clock.now })
      }
    }
    return {
      parked,
      afterCancel: await read('w1'),
      running: await read('w2'),
      webhook: await read('w3'),
    }
  })
}

/** What the third-party provider scenario saw. */
export interface ThirdPartyOutcome {
  /** Codes of registering the provider under a built-in's name and under an invalid name. */
  readonly refusedNames: readonly string[]
  /** `code:path` of suspending with a config the provider refuses (nothing registered: `running`). */
  readonly refusedConfig: string
  readonly statusAfterRefusal: string
  readonly early: readonly string[]
  readonly atOccurrence: readonly string[]
  readonly input: unknown
}

/**
 * A third party registers `every-hour` (next: the next full hour, details
 * `{ hour }`; a config without `label` refused). Registering it as `cron`
 * or as `Every Hour` is refused; a worker suspended with a refused config
 * stays running; one parked at T0 + 10 minutes is not woken at T0 + 59
 * minutes and is resumed at T0 + 60 with the provider's details.
 */
export async function thirdPartyTrigger(
  rt: Runtime,
  kind: WakeBackendKind,
): Promise<ThirdPartyOutcome> {
  return withStorage(kind, async (storage, clock) => {
    const provider = {
      next(config: unknown, now: number) {
        if (typeof (config as { label?: unknown } | undefined)?.label !== 'string') {
          throw new Error('every-hour needs a label')
        }
        const dueAt = Math.floor(now / (60 * MINUTE)) * 60 * MINUTE + 60 * MINUTE
        return { dueAt, details: { hour: new Date(dueAt).getUTCHours() } }
      },
    }
    const refusedNames = [
      await codeOf(async () => rt.registerTriggerProvider('cron', provider)),
      await codeOf(async () => rt.registerTriggerProvider('Every Hour', provider)),
    ]
    rt.registerTriggerProvider('every-hour', provider)
    const backend = storage.open()
    clock.advance(10 * MINUTE)
    const refusedConfig = await failureOf(() =>
      park(rt, backend, clock, 'refused', { trigger: { provider: 'every-hour', config: {} } }),
    )
    await park(rt, backend, clock, 'hourly', {
      trigger: { provider: 'every-hour', config: { label: 'report' } },
    })
    let input: unknown = null
    const running = dispatcher(rt, storage.open(), clock, async (worker) => {
      input = worker.resumeInput
      await worker.complete()
    })
    clock.set(T0 + 59 * MINUTE)
    const early = (await running.tick()).outcomes.map((o) => o.outcome)
    clock.set(T0 + 60 * MINUTE)
    const atOccurrence = (await running.tick()).outcomes.map((o) => o.outcome)
    await running.stop()
    return {
      refusedNames,
      refusedConfig,
      statusAfterRefusal: (await rt.inspectWorker(backend, 'refused')).status,
      early,
      atOccurrence,
      input,
    }
  })
}
