/**
 * The checks of wake-webhook.test.ts run against deliberately broken
 * runtimes (on memory: the endpoint is the same code on every backend); each
 * mutant must make the scenario see the failure its check exists to catch.
 */

import type { IncomingMessage } from 'node:http'
import type { Backend, Clock } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { JsonValue } from '../src/shared/canonical-json.js'
import type { WebhookTriggerRecord } from '../src/wake/webhook-trigger.js'
import { BACKENDS } from './backends.js'
import { mutated, unmockAll } from './mutants.js'
import { webhookCalls } from './wake-webhook-scenarios.js'

const WEBHOOK_TRIGGER = '../src/wake/webhook-trigger.ts'
const WEBHOOK_CALLS = '../src/wake/webhook-calls.ts'
const WEBHOOK_BODY = '../src/wake/webhook-body.ts'
const MEMORY = BACKENDS.find((factory) => factory.name === 'memory')

afterEach(unmockAll)

async function onMemory(rt: Awaited<ReturnType<typeof mutated>>) {
  if (MEMORY === undefined) throw new Error('no memory backend')
  const fixture = MEMORY.setup()
  try {
    return await webhookCalls(rt, fixture)
  } finally {
    await fixture.cleanup()
  }
}

describe('webhook mutants', () => {
  it('a secret comparison that accepts any secret: the wrong secret gets 202 and wakes the worker', async () => {
    const rt = await mutated(WEBHOOK_TRIGGER, (original) => ({
      ...original,
      webhookSecretMatches: () => true,
    }))
    const outcome = await onMemory(rt)
    expect(outcome.refused[0]).toEqual([202, null])
    expect(outcome.afterRefused.wakes).toBeGreaterThan(0)
  })

  it('a handler that answers 202 before the durable write: the wake is not stored when the caller has its answer', async () => {
    const rt = await mutated(WEBHOOK_CALLS, (original) => {
      const record = original.recordWebhookCall as (
        backend: Backend,
        trigger: WebhookTriggerRecord,
        body: JsonValue,
        clock: Clock,
      ) => Promise<unknown>
      return {
        ...original,
        // Answers with the id it will write, and writes a second later.
        recordWebhookCall: async (
          backend: Backend,
          trigger: WebhookTriggerRecord,
          body: JsonValue,
          clock: Clock,
        ) => {
          setTimeout(() => void record(backend, trigger, body, clock).catch(() => undefined), 1000)
          return { wakeId: `${String(clock()).padStart(13, '0')}-${'0'.repeat(32)}`, eventId: '' }
        },
      }
    })
    const outcome = await onMemory(rt)
    expect(outcome.accepted).toBe(202)
    expect(outcome.atAnswer).toBe('WAKE_NOT_FOUND')
  })

  it('a body limit not enforced: 5000 bytes to an endpoint limited to 4096 are accepted', async () => {
    const rt = await mutated(WEBHOOK_BODY, (original) => ({
      ...original,
      readLimitedBody: async (request: IncomingMessage) => {
        const chunks: Buffer[] = []
        for await (const chunk of request) chunks.push(chunk as Buffer)
        return Buffer.concat(chunks)
      },
    }))
    const outcome = await onMemory(rt)
    expect(outcome.refused[2]).toEqual([202, null])
  })

  it('a config check whose error echoes the config: the secret passed by mistake shows in the error', async () => {
    const rt = await mutated(WEBHOOK_TRIGGER, (original) => ({
      ...original,
      parseWebhookTriggerConfig: (config: unknown) => {
        const parse = original.parseWebhookTriggerConfig as (config: unknown) => unknown
        if ((config as { secretSha256?: unknown }).secretSha256 !== undefined) return parse(config)
        throw Object.assign(new Error(`Invalid webhook trigger config ${JSON.stringify(config)}`), {
          code: 'INVALID_WAKE',
        })
      },
    }))
    const outcome = await onMemory(rt)
    expect(outcome.leaks).toContain('refusedSuspend')
  })
})
