/**
 * Resume conditions that fire, on the memory backend and the filesystem with
 * a manual clock (test/worker-wake-scenarios.ts). Each scenario is also run
 * against a broken runtime in worker-wake-mutants.test.ts.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { T0, WAKE_BACKENDS } from './wake-scenarios.js'
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

describe.each(WAKE_BACKENDS)('resume conditions on $name', (kind) => {
  it("a third party's trigger provider: built-in and invalid names refused, a refused config registers nothing, the worker resumed at its occurrence with its details", async () => {
    const outcome = await thirdPartyTrigger(runtime, kind)
    expect(outcome).toEqual({
      refusedNames: ['INVALID_WAKE', 'INVALID_WAKE'],
      refusedConfig: 'TRIGGER_REGISTRATION_FAILED:',
      statusAfterRefusal: 'running',
      early: [],
      atOccurrence: ['fired'],
      input: {
        kind: 'schedule',
        provider: 'every-hour',
        details: { hour: new Date(T0 + 3_600_000).getUTCHours() },
        occurrence: new Date(T0 + 3_600_000).toISOString(),
        wakeId: expect.stringMatching(runtime.WAKE_ID_PATTERN),
      },
    })
  })

  it("a parked worker's next wake is its earliest pending wake by due time, with its topic and webhook trigger", async () => {
    // T0 is 2027-01-15T08:00Z: the schedule is due at 03:00 the next day.
    expect(await nextWake(runtime, kind)).toEqual({
      parked: ['timeout', T0 + 60_000, 'fix-chosen', false],
      afterCancel: ['schedule', Date.UTC(2027, 0, 16, 3), 'fix-chosen', false],
      running: null,
      webhook: [null, null, null, true],
    })
  })

  it('a wake whose payload the handler cannot read is given up after maxAttempts: recorded failed, audited on the worker, which stays parked', async () => {
    const outcome = await badPayload(runtime, kind)
    const wakeId = expect.stringMatching(runtime.WAKE_ID_PATTERN)
    expect(outcome).toEqual({
      ticks: ['handler-failed', 'failed', undefined],
      state: 'failed',
      failure: {
        failedAt: expect.any(Number),
        attempts: 2,
        code: 'WAKE_CORRUPT',
        message: expect.stringContaining('fails its schema'),
        audited: true,
      },
      status: 'suspended',
      lastAudit: {
        event: 'wake_failed',
        detail: { wakeId, cause: 'timeout', attempts: 2, code: 'WAKE_CORRUPT' },
      },
    })
  })

  it('a timeout fires at durationMinutes, per onTimeout, and the resumed worker is owned once', async () => {
    const outcome = await timeoutActions(runtime, kind)
    expect(outcome.registered).toBe(true)
    expect(outcome.early).toEqual([])
    expect(outcome.atTimeout).toEqual(['fired', 'fired', 'fired'])
    expect(outcome.resumed).toEqual({
      'w-summary': {
        input: {
          kind: 'timeout',
          summary:
            'No other resume condition was met within 60 minutes; the timeout woke the worker.',
          durationMinutes: 60,
          wakeId: expect.stringMatching(runtime.WAKE_ID_PATTERN),
        },
        cause: expect.stringMatching(/^wake:\d{13}-[0-9a-f]{32}$/),
      },
      'w-input': {
        input: { choice: 'b' },
        cause: expect.stringMatching(/^wake:\d{13}-[0-9a-f]{32}$/),
      },
    })
    expect(outcome.secondResume).toBe('CONCURRENT_RESUME')
    expect(outcome.failed).toEqual({ status: 'closed', timedOut: true, resume: 'WORKER_CLOSED' })
  })

  it('an event published before any dispatcher started wakes the worker; one published before it parked does not', async () => {
    const outcome = await eventBeforeDispatcher(runtime, kind)
    expect(outcome).toEqual({
      earlyWakes: 0,
      lateWakes: 1,
      input: {
        kind: 'event',
        topic: 'fix-chosen',
        eventId: expect.stringMatching(runtime.EVENT_ID_PATTERN),
        publishedAt: expect.any(Number),
        payload: { fix: 'new' },
        wakeId: expect.stringMatching(runtime.WAKE_ID_PATTERN),
      },
      timeout: { state: 'cancelled', reason: expect.stringMatching(/^worker resumed by wake /) },
      audit: [
        'worker_started',
        'resume_by_dispatched',
        'worker_suspended',
        'worker_resumed',
        'wakes_cancelled',
        'worker_completed',
      ],
    })
  })

  it('a worker resumed or closed by hand: its wake is cancelled and audited, never fired', async () => {
    const outcome = await byHand(runtime, kind)
    expect(outcome).toEqual({
      resumedWake: { state: 'cancelled', reason: 'worker resumed' },
      closedWake: { state: 'cancelled', reason: 'worker closed' },
      publishAfter: 0,
      resumedAudit: [
        'worker_started',
        'resume_by_dispatched',
        'worker_suspended',
        'worker_resumed',
        'wakes_cancelled',
        'worker_completed',
      ],
      closedAudit: [
        'worker_started',
        'resume_by_dispatched',
        'worker_suspended',
        'worker_closed',
        'wakes_cancelled',
      ],
      tick: [],
    })
  })

  it('a timeout racing an event over two dispatchers: exactly one wins', async () => {
    const outcome = await timeoutRacesEvent(runtime, kind)
    expect(outcome).toEqual({
      resumes: 1,
      causeIsAWake: true,
      status: 'suspended',
      waitsOn: 'later',
      pending: 0,
      errors: 0,
    })
  })

  it('a timeout and an event of one worker due in one tick: the second waits for the first, and is finished by the same tick (cancelled, or delivered and dropped), never left to the firing lease', async () => {
    const outcome = await sameWorkerOneTick(runtime, kind)
    expect(outcome.resumes).toBe(1)
    // The winner fired; the loser archived (cancelled by the winner's resume) or fired and dropped.
    expect([
      ['archived', 'fired'],
      ['fired', 'fired'],
    ]).toContainEqual(outcome.tick)
    expect([
      ['cancelled', 'fired+delivered'],
      ['fired+delivered', 'fired+delivered'],
    ]).toContainEqual(outcome.states)
  })

  it('a cron trigger fires at its next occurrence in its time zone, and cancels the timeout', async () => {
    const outcome = await cronTrigger(runtime, kind)
    expect(outcome).toEqual({
      early: [],
      atOccurrence: ['fired'],
      input: {
        kind: 'schedule',
        provider: 'cron',
        schedule: '0 3 * * *',
        timeZone: 'Europe/Paris',
        occurrence: '2027-01-16T02:00:00.000Z',
        wakeId: expect.stringMatching(runtime.WAKE_ID_PATTERN),
      },
      timeout: 'cancelled',
    })
  })

  it('a wake that outlived its suspension is delivered and dropped: the worker stays parked', async () => {
    const outcome = await staleWake(runtime, kind)
    expect(outcome).toEqual({ tick: ['fired'], status: 'suspended', waitsOn: 'second', resumes: 1 })
  })
})

describe('event topics and resume conditions are validated', () => {
  it('publishEvent: topic names, plain JSON payloads, the size limit', async () => {
    expect(await publishValidation(runtime)).toEqual([
      ...Array(6).fill('INVALID_EVENT_TOPIC:'),
      'INVALID_EVENT_PAYLOAD:',
      'INVALID_EVENT_PAYLOAD:',
      'EVENT_PAYLOAD_TOO_LARGE:',
      'none',
    ])
  })

  it('suspend: timeout input, topic names, durations and cron configs are checked before anything is registered', async () => {
    const failed = 'TRIGGER_REGISTRATION_FAILED:trigger.config'
    expect(await suspendValidation(runtime)).toEqual([
      'INVALID_RESUME_CONDITIONS:timeout.input',
      'INVALID_RESUME_CONDITIONS:timeout.input',
      'INVALID_RESUME_CONDITIONS:timeout.input',
      'INVALID_RESUME_CONDITIONS:onEvent',
      'INVALID_RESUME_CONDITIONS:timeout.durationMinutes',
      'TRIGGER_REGISTRATION_FAILED:trigger.provider',
      `${failed}.timeZone`,
      `${failed}.timeZone`,
      `${failed}.schedule`,
      `${failed}.schedule`,
      failed,
      'running',
      'nothing registered',
    ])
  })
})

describe('docs/runtime/wakes.md', () => {
  it('lists every wake error code in its Error codes section', () => {
    const page = readFileSync(
      join(import.meta.dirname, '..', '..', '..', 'docs', 'runtime', 'wakes.md'),
      'utf8',
    )
    const section = page.slice(page.indexOf('## Error codes'), page.indexOf('## Tests'))
    const listed = (code: string) => section.includes(`\`${code}\``)
    expect(runtime.WAKE_ERROR_CODES.filter((code) => !listed(code))).toEqual([])
    // The check can fail: a code the section does not hold is reported.
    expect(listed('NOT_A_WAKE_CODE')).toBe(false)
  })
})
