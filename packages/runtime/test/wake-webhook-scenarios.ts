/**
 * The webhook trigger (docs/runtime/wakes.md, Webhooks) as a scenario that
 * returns what it saw: wake-webhook.test.ts expects the correct outcome,
 * wake-webhook-mutants.test.ts runs it against broken runtimes. The calls
 * come from a separate process (test/fixtures/wake-webhook-caller.mjs, plain
 * Node), to two dispatchers' endpoints over one storage.
 */

import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Backend } from '@agent-state/core'
import type { BackendFixture } from './backends.js'
import { PACKAGE_DIR } from './child-process.js'
import type { Runtime } from './mutants.js'
import { listAll } from './wake-figures.js'

const run = promisify(execFile)
const CALLER = join(PACKAGE_DIR, 'test/fixtures/wake-webhook-caller.mjs')

/** One request the caller process makes (see the fixture). */
export interface CallSpec {
  readonly url: string
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string
  readonly bodyBytes?: number
}

/** What the caller process got back. */
export interface CallAnswer {
  readonly status: number
  readonly body: { readonly wakeId?: string; readonly error?: { code: string; message: string } }
}

/** Makes `calls` one after another from a separate Node process. */
export async function callFromChild(calls: readonly CallSpec[]): Promise<CallAnswer[]> {
  const { stdout } = await run(process.execPath, [CALLER, JSON.stringify(calls)], {
    timeout: 30_000,
  })
  return JSON.parse(stdout) as CallAnswer[]
}

/** Every stored key and value of the namespace, as text: wherever a stored secret would show. */
async function everythingStored(backend: Backend): Promise<string> {
  const parts: string[] = []
  for (const key of await listAll(backend, '')) {
    const stored = await backend.get(key)
    parts.push(key, stored === null ? '' : Buffer.from(stored.value).toString('utf8'))
  }
  return parts.join('\n')
}

/** The code of what `run` threw, its message, or `none`. */
async function thrown(body: () => Promise<unknown>): Promise<{ code: string; text: string }> {
  try {
    await body()
    return { code: 'none', text: '' }
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause
    return {
      code: (error as { code?: string }).code ?? 'plain',
      text: `${String(error)} ${JSON.stringify(error)} ${String(cause)} ${JSON.stringify(cause)}`,
    }
  }
}

/** The refused calls' statuses and codes, in the order {@link webhookCalls} makes them. */
export const REFUSED = [
  [403, 'WEBHOOK_FORBIDDEN'],
  [401, 'WEBHOOK_UNAUTHORIZED'],
  [413, 'WEBHOOK_BODY_TOO_LARGE'],
  [413, 'WEBHOOK_BODY_TOO_LARGE'],
  [400, 'WEBHOOK_INVALID_JSON'],
  [404, 'WEBHOOK_NOT_FOUND'],
  [404, 'WEBHOOK_NOT_FOUND'],
  [405, 'WEBHOOK_METHOD_NOT_ALLOWED'],
  [415, 'WEBHOOK_UNSUPPORTED_MEDIA_TYPE'],
] as const

/** The body of the accepted call. */
export const CALL_BODY = { fix: 2, note: 'chosen by the reviewer' }

/**
 * A worker parks on a webhook trigger; two dispatchers serve endpoints (a's
 * body limit 4 KiB, b's the default 64 KiB). A child process makes the
 * refused calls ({@link REFUSED}: wrong secret, none, 5000 bytes to a, 64 KiB
 * and 1 byte to b, malformed JSON, an unknown trigger, a malformed escape in the path, GET, text/plain);
 * both dispatchers tick. Then the right call to a, the wake read at once
 * after the child got its answer, b ticks alone, and a late call to b.
 * Also a suspend with the secret itself in the config.
 */
export async function webhookCalls(rt: Runtime, fixture: BackendFixture) {
  const backend = fixture.create()
  const hook = rt.createWebhookTrigger()
  const worker = await rt.startWorker(backend, { workerId: 'hooked', holder: 'app' })
  const suspension = await worker.suspend({
    reason: 'waits for a reviewer',
    conditions: { trigger: hook.trigger },
  })
  const triggerId = suspension.autoResumeTrigger ?? ''
  const resumed: Array<{ by: string; input: unknown }> = []
  const start = (name: string, webhook: { maxBodyBytes?: number }) =>
    rt.startWakeDispatcher(fixture.create(), {
      handlers: {},
      workers: {
        holder: name,
        onResumed: async (woken) => {
          resumed.push({ by: name, input: woken.resumeInput })
          await woken.complete({ done: true })
        },
      },
      dispatcherId: name,
      intervalMs: null,
      webhook,
    })
  const a = start('a', { maxBodyBytes: 4096 })
  const b = start('b', {})
  try {
    await Promise.all([a.ready, b.ready])
    const urlA = rt.webhookTriggerUrl(a.webhookEndpoint ?? '', triggerId)
    const urlB = rt.webhookTriggerUrl(b.webhookEndpoint ?? '', triggerId)
    const json = { 'content-type': 'application/json' }
    const wrongSecret = rt.createWebhookTrigger().secret
    const good = { ...json, authorization: `Bearer ${hook.secret}` }
    const refused = await callFromChild([
      { url: urlA, headers: { ...json, authorization: `Bearer ${wrongSecret}` }, body: '{}' },
      { url: urlA, headers: json, body: '{}' },
      { url: urlA, headers: good, bodyBytes: 5000 },
      { url: urlB, headers: good, bodyBytes: 64 * 1024 + 1 },
      { url: urlA, headers: good, body: '{"fix":' },
      {
        url: rt.webhookTriggerUrl(a.webhookEndpoint ?? '', `resume-${'0'.repeat(32)}`),
        headers: good,
        body: '{}',
      },
      { url: `${a.webhookEndpoint}/wakes/webhook/%E0%A4%A`, headers: good, body: '{}' },
      { url: urlA, method: 'GET', headers: good },
      { url: urlA, headers: { ...good, 'content-type': 'text/plain' }, body: 'fix 2' },
    ])
    const refusedTicks = [...(await a.tick()).outcomes, ...(await b.tick()).outcomes]
    const afterRefused = {
      wakes: (await listAll(backend, 'wakes/records/')).length,
      outcomes: refusedTicks.map((o) => o.outcome),
      status: (await rt.inspectWorker(backend, 'hooked')).status,
    }
    const [accepted] = await callFromChild([
      { url: urlA, headers: good, body: JSON.stringify(CALL_BODY) },
    ])
    // Read as soon as the caller has its answer: a 202 means the call is already durable.
    const atAnswer = await thrown(async () => {
      const wake = await rt.getWake(fixture.create(), accepted?.body.wakeId ?? '')
      throw Object.assign(new Error('read'), { code: `${wake.state} ${wake.cause}` })
    })
    const byB = (await b.tick()).outcomes.map((o) => o.outcome)
    const late = await callFromChild([{ url: urlB, headers: good, body: '{}' }])
    const plainSecret = `plain-${hook.secret}`
    const refusedSuspend = await thrown(async () => {
      const other = await rt.startWorker(backend, { workerId: 'plain', holder: 'app' })
      await other.suspend({
        reason: 'secret in the config',
        conditions: { trigger: { provider: 'webhook', config: { secret: plainSecret } } },
      })
    })
    const answers = JSON.stringify([refused, accepted, late])
    const stored = await everythingStored(backend)
    const inspected = JSON.stringify(await rt.inspectWorker(backend, 'hooked'))
    const leaks = Object.entries({
      answers,
      stored,
      inspected,
      refusedSuspend: refusedSuspend.text,
    })
      .filter(([, text]) =>
        [hook.secret, wrongSecret, plainSecret].some((secret) => text.includes(secret)),
      )
      .map(([where]) => where)
    return {
      refused: refused.map((answer) => [answer.status, answer.body.error?.code ?? null]),
      afterRefused,
      accepted: accepted?.status,
      atAnswer: atAnswer.code,
      byB,
      resumed,
      late: late.map((answer) => [answer.status, answer.body.error?.code ?? null]),
      refusedSuspend: refusedSuspend.code,
      plainStatus: (await rt.inspectWorker(backend, 'plain')).status,
      leaks,
    }
  } finally {
    await Promise.all([a.stop(), b.stop()])
  }
}
