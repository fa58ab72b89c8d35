/**
 * Resume conditions that fire, on the memory backend and the filesystem with
 * a manual clock (test/worker-wake-scenarios.ts). Each scenario is also run
 * against a broken runtime in worker-wake-mutants.test.ts.
 */

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { WAKE_BACKENDS } from './wake-scenarios.js'
import {
  byHand,
  cronTrigger,
  eventBeforeDispatcher,
  staleWake,
  timeoutActions,
  timeoutRacesEvent,
} from './worker-wake-scenarios.js'

describe.each(WAKE_BACKENDS)('resume conditions on $name', (kind) => {
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
  const codeOf = async (run: () => Promise<unknown>) => {
    try {
      await run()
      return 'none'
    } catch (error) {
      return `${(error as { code?: string }).code}:${(error as { context?: { path?: string } }).context?.path ?? ''}`
    }
  }

  it('publishEvent: topic names, plain JSON payloads, the size limit', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore(), namespace: 'wakes' })
    for (const topic of ['', 'a/b', '../x', '.as~x', 'x'.repeat(129), 7]) {
      expect(await codeOf(() => runtime.publishEvent(backend, topic as string, 1))).toBe(
        'INVALID_EVENT_TOPIC:',
      )
    }
    expect(await codeOf(() => runtime.publishEvent(backend, 't', undefined))).toBe(
      'INVALID_EVENT_PAYLOAD:',
    )
    expect(await codeOf(() => runtime.publishEvent(backend, 't', { a: [1, Number.NaN] }))).toBe(
      'INVALID_EVENT_PAYLOAD:',
    )
    const limit = runtime.MAX_EVENT_PAYLOAD_BYTES
    expect(await codeOf(() => runtime.publishEvent(backend, 't', 'x'.repeat(limit)))).toBe(
      'EVENT_PAYLOAD_TOO_LARGE:',
    )
    // Exactly at the limit (the JSON string's two quotes count).
    const published = await runtime.publishEvent(backend, 't', 'x'.repeat(limit - 2))
    expect((await runtime.getEvent(backend, 't', published.eventId)).payload).toHaveLength(
      limit - 2,
    )
  })

  it('suspend: resume_with_input needs its input, topics are names, unknown providers fail registration', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore(), namespace: 'wakes' })
    const worker = await runtime.startWorker(backend, { workerId: 'w1' })
    const suspend = (conditions: unknown) => () => worker.suspend({ reason: 'r', conditions })
    expect(
      await codeOf(suspend({ timeout: { durationMinutes: 1, onTimeout: 'resume_with_input' } })),
    ).toBe('INVALID_RESUME_CONDITIONS:timeout.input')
    expect(await codeOf(suspend({ timeout: { durationMinutes: 1, input: 'x' } }))).toBe(
      'INVALID_RESUME_CONDITIONS:timeout.input',
    )
    expect(
      await codeOf(
        suspend({
          timeout: {
            durationMinutes: 1,
            onTimeout: 'resume_with_input',
            input: 'x'.repeat(runtime.MAX_TIMEOUT_INPUT_BYTES),
          },
        }),
      ),
    ).toBe('INVALID_RESUME_CONDITIONS:timeout.input')
    expect(await codeOf(suspend({ onEvent: 'a/b' }))).toBe('INVALID_RESUME_CONDITIONS:onEvent')
    expect(
      await codeOf(suspend({ timeout: { durationMinutes: runtime.MAX_TIMEOUT_MINUTES + 1 } })),
    ).toBe('INVALID_RESUME_CONDITIONS:timeout.durationMinutes')
    expect(await codeOf(suspend({ trigger: { provider: 'github' }, onEvent: 'x' }))).toBe(
      'TRIGGER_REGISTRATION_FAILED:',
    )
    expect(worker.status).toBe('running')
    // Nothing was registered by the failed suspends.
    expect(await runtime.readWorkerWakes(backend, 'w1')).toBeNull()
  })

  it('suspend: a cron trigger is validated at registration (TRIGGER_REGISTRATION_FAILED, naming the field)', async () => {
    const backend = createMemoryBackend({ store: createMemoryStore(), namespace: 'wakes' })
    const worker = await runtime.startWorker(backend, { workerId: 'w-cron' })
    const registrationFailure = async (config: unknown) => {
      try {
        await worker.suspend({ reason: 'r', conditions: { trigger: { provider: 'cron', config } } })
        return 'none'
      } catch (error) {
        const { code, cause } = error as { code: string; cause?: { context?: { path?: string } } }
        return `${code}:${cause?.context?.path ?? ''}`
      }
    }
    const failed = 'TRIGGER_REGISTRATION_FAILED:trigger.config'
    expect(await registrationFailure({ schedule: '0 3 * * *' })).toBe(`${failed}.timeZone`)
    expect(await registrationFailure({ schedule: '0 3 * * *', timeZone: 'Mars/Olympus' })).toBe(
      `${failed}.timeZone`,
    )
    expect(await registrationFailure({ schedule: '61 3 * * *', timeZone: 'UTC' })).toBe(
      `${failed}.schedule`,
    )
    expect(await registrationFailure({ schedule: 'whenever', timeZone: 'UTC' })).toBe(
      `${failed}.schedule`,
    )
    expect(await registrationFailure({ schedule: '0 3 * * *', timeZone: 'UTC', at: 1 })).toBe(
      failed,
    )
    expect(worker.status).toBe('running')
    expect(await runtime.readWorkerWakes(backend, 'w1')).toBeNull()
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
