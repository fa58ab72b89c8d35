/**
 * The `webhook` trigger (docs/runtime/wakes.md, Webhooks) on memory, the
 * filesystem and Redis: calls from a separate process to two dispatchers'
 * endpoints. wake-webhook-mutants.test.ts runs the scenario against broken
 * runtimes.
 */

import { describe, expect, it } from 'vitest'
import * as runtime from '../src/index.js'
import { BACKENDS } from './backends.js'
import { CALL_BODY, REFUSED, webhookCalls } from './wake-webhook-scenarios.js'

const WEBHOOK_BACKENDS = BACKENDS.filter((factory) =>
  ['memory', 'fs', 'redis'].includes(factory.name),
)

describe.concurrent.each(WEBHOOK_BACKENDS)('webhook triggers on $name', (factory) => {
  it('a POST with the secret resumes the worker with its body, through any dispatcher; every refused call wakes nothing; the secret is never stored or shown', async () => {
    const fixture = factory.setup()
    try {
      const outcome = await webhookCalls(runtime, fixture)
      expect(outcome.refused).toEqual(REFUSED.map((answer) => [...answer]))
      expect(outcome.afterRefused).toEqual({ wakes: 0, outcomes: [], status: 'suspended' })
      expect(outcome.accepted).toBe(202)
      expect(outcome.atAnswer).toBe('pending webhook')
      expect(outcome.byB).toEqual(['fired'])
      expect(outcome.resumed).toEqual([
        {
          by: 'b',
          input: {
            kind: 'webhook',
            body: CALL_BODY,
            receivedAt: expect.any(Number),
            wakeId: expect.stringMatching(runtime.WAKE_ID_PATTERN),
          },
        },
      ])
      expect(outcome.late).toEqual([[410, 'WEBHOOK_GONE']])
      expect(outcome.refusedSuspend).toBe('TRIGGER_REGISTRATION_FAILED')
      expect(outcome.plainStatus).toBe('running')
      expect(outcome.leaks).toEqual([])
    } finally {
      await fixture.cleanup()
    }
  })
})
