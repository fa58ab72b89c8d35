import type { Backend } from '@agent-state/core'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import {
  inspectRun,
  openRun,
  readEffect,
  resolveEffect,
  resumeRun,
  startWorker,
} from '../src/index.js'
import { runEffectKey, runHeadKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { type Provider, paymentHandler, startProvider } from './provider.js'

let provider: Provider
beforeAll(async () => {
  provider = await startProvider()
})
afterAll(async () => {
  await provider.stop()
})

const applied = async (backendRunId: string, effectId: string): Promise<number> => {
  const { idempotencyKeyOf } = await import('../src/index.js')
  return (await provider.log()).applied[idempotencyKeyOf(backendRunId, effectId)] ?? 0
}

describe.each(BACKENDS)('runs and the effect ledger on $name', (factory) => {
  let fixture: BackendFixture
  let backend: Backend
  let prefix: string
  let counter = 0
  beforeEach(() => {
    fixture = factory.setup()
    backend = fixture.create()
    prefix = `${factory.name}-${Date.now().toString(36)}-${++counter}`
  })
  afterEach(async () => {
    await fixture.cleanup()
  })
  const handlers = () => ({ pay: paymentHandler(provider.url) })

  it('records an effect planned → submitted → confirmed and never runs a confirmed effect again', async () => {
    const runId = `${prefix}-a`
    const run = await openRun(backend, runId, { handlers: handlers(), holder: 'owner-1' })
    expect(run.attempt.attemptId).toBe(`${runId}@${run.attempt.token}`)
    const result = await run.effect('pay', 'charge-1', { amount: 5 })
    expect(result).toMatchObject({ amount: 5 })
    const record = await readEffect(backend, runId, 'charge-1')
    expect(record?.state).toBe('confirmed')
    expect(record?.history.map((h) => h.state)).toEqual(['planned', 'submitted', 'confirmed'])
    expect(await run.effect('pay', 'charge-1', { amount: 5 })).toEqual(result)
    await run.close()
    const again = await openRun(backend, runId, { handlers: handlers() })
    expect(again.attemptCount).toBe(2)
    expect(again.attempt.token).toBeGreaterThan(run.attempt.token)
    expect(await again.effect('pay', 'charge-1', { amount: 5 })).toEqual(result)
    expect(await applied(runId, 'charge-1')).toBe(1)
    expect(await codeOf(again.effect('pay', 'charge-1', { amount: 6 }))).toBe('EFFECT_CONFLICT')
    await again.close()
  })

  it('a second live owner gets RUN_OWNED naming the holder and expiry, and records nothing', async () => {
    const runId = `${prefix}-b`
    const run = await openRun(backend, runId, { handlers: handlers(), holder: 'first-owner' })
    const before = await backend.head(runHeadKey(runId))
    let caught: unknown
    try {
      await openRun(fixture.create(), runId, { handlers: handlers(), holder: 'second' })
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({ code: 'RUN_OWNED', context: { holder: 'first-owner' } })
    expect(typeof (caught as { context: { expiresAt: unknown } }).context.expiresAt).toBe('number')
    expect((await backend.head(runHeadKey(runId)))?.version).toBe(before?.version)
    await run.close()
  })

  it('a rejected effect is failed and is not dispatched again', async () => {
    const runId = `${prefix}-c`
    const run = await openRun(backend, runId, { handlers: handlers() })
    expect(await codeOf(run.effect('pay', 'bad', { amount: -1 }))).toBe('EFFECT_FAILED')
    expect((await readEffect(backend, runId, 'bad'))?.state).toBe('failed')
    expect(await codeOf(run.effect('pay', 'bad', { amount: -1 }))).toBe('EFFECT_FAILED')
    expect((await readEffect(backend, runId, 'bad'))?.history).toHaveLength(3)
    await run.close()
  })

  it('a timeout after submit is unknown, never failed, and resume reconciles it without a second dispatch', async () => {
    const runId = `${prefix}-d`
    const slow = {
      pay: {
        ...paymentHandler(provider.url, { headers: () => ({ 'x-delay-ms': '1500' }) }),
        timeoutMs: 100,
      },
    }
    const run = await openRun(backend, runId, { handlers: slow })
    expect(await codeOf(run.effect('pay', 'slow-1', { amount: 7 }))).toBe('EFFECT_UNKNOWN')
    expect((await readEffect(backend, runId, 'slow-1'))?.state).toBe('unknown')
    expect((await inspectRun(backend, runId)).incomplete.map((e) => e.effectId)).toEqual(['slow-1'])
    await run.close()
    const resumed = await resumeRun(backend, runId, { handlers: handlers() })
    const record = await readEffect(backend, runId, 'slow-1')
    expect(record?.state).toBe('confirmed')
    expect(record?.history.at(-1)?.reason).toBe('reconciler:confirmed')
    expect(
      resumed.audit.some(
        (e) => e.event === 'effect_reconciled' && e.detail.rule === 'reconciler:confirmed',
      ),
    ).toBe(true)
    expect(await resumed.effect('pay', 'slow-1', { amount: 7 })).toMatchObject({ amount: 7 })
    expect(await applied(runId, 'slow-1')).toBe(1)
    expect((await inspectRun(backend, runId)).incomplete).toEqual([])
    await resumed.close()
  })

  it('an absent effect that is not retry-safe needs attention; operator resolutions are recorded', async () => {
    const runId = `${prefix}-e`
    const unsafe = { pay: paymentHandler(provider.url, { retrySafe: false }) }
    const run = await openRun(backend, runId, { handlers: unsafe })
    // A dispatch that throws before reaching the provider: unknown, and absent at the target.
    const broken = { pay: { ...paymentHandler('http://127.0.0.1:1', { retrySafe: false }) } }
    await run.close()
    const first = await openRun(backend, runId, { handlers: broken })
    expect(await codeOf(first.effect('pay', 'x1', { amount: 1 }))).toBe('EFFECT_UNKNOWN')
    expect(await codeOf(first.effect('pay', 'x2', { amount: 2 }))).toBe('EFFECT_UNKNOWN')
    await first.close()
    let caught: unknown
    try {
      await resumeRun(backend, runId, { handlers: unsafe })
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({ code: 'RUN_NEEDS_ATTENTION' })
    const listed = (caught as { context: { effects: { effectId: string; rule: string }[] } })
      .context.effects
    expect(listed.map((e) => [e.effectId, e.rule])).toEqual([
      ['x1', 'reconciler:absent+not_retry_safe'],
      ['x2', 'reconciler:absent+not_retry_safe'],
    ])
    expect(await applied(runId, 'x1')).toBe(0)
    await resolveEffect(backend, runId, 'x1', { action: 'retry', reason: 'checked the ledger' })
    await resolveEffect(backend, runId, 'x2', {
      action: 'fail',
      message: 'cancelled',
      reason: 'customer left',
    })
    expect(
      await codeOf(resolveEffect(backend, runId, 'x2', { action: 'retry', reason: 'again' })),
    ).toBe('INVALID_RESOLUTION')
    const resumed = await resumeRun(backend, runId, { handlers: unsafe })
    expect((await readEffect(backend, runId, 'x1'))?.state).toBe('confirmed')
    expect(await applied(runId, 'x1')).toBe(1)
    expect(await codeOf(resumed.effect('pay', 'x2', { amount: 2 }))).toBe('EFFECT_FAILED')
    const events = (await inspectRun(backend, runId)).head.audit.map((e) => e.event)
    expect(events.filter((e) => e === 'operator_resolved')).toHaveLength(2)
    expect(events).toContain('needs_attention')
    expect(events).toContain('effect_redispatched')
    await resumed.close()
  })

  it('a failed revalidation stops the run before anything is dispatched', async () => {
    const runId = `${prefix}-f`
    const broken = { pay: paymentHandler('http://127.0.0.1:1') }
    const run = await openRun(backend, runId, { handlers: broken })
    await run.commitStep(
      'approve',
      { approval: { by: 'alice', expiresAt: '2000-01-01T00:00:00.000Z' } },
      { next: 'pay' },
    )
    expect(await codeOf(run.effect('pay', 'p1', { amount: 3 }))).toBe('EFFECT_UNKNOWN')
    await run.close()
    const expired = {
      name: 'approval-not-expired',
      check: ({ lastStep }: { lastStep: { outputs: unknown } | null }) => {
        const approval = (lastStep?.outputs as { approval?: { expiresAt: string } } | undefined)
          ?.approval
        return approval !== undefined && Date.parse(approval.expiresAt) > Date.now()
          ? true
          : 'approval expired'
      },
    }
    expect(
      await codeOf(resumeRun(backend, runId, { handlers: handlers(), revalidate: [expired] })),
    ).toBe('RUN_REVALIDATION_FAILED')
    expect(await applied(runId, 'p1')).toBe(0)
    const view = await inspectRun(backend, runId)
    expect(view.head.audit.at(-1)).toMatchObject({
      event: 'revalidation_failed',
      detail: { check: 'approval-not-expired' },
    })
    expect(view.lastStep?.outputs).toMatchObject({ approval: { by: 'alice' } })
    const ok = await resumeRun(backend, runId, {
      handlers: handlers(),
      revalidate: [{ name: 'always', check: () => true }],
    })
    expect(await applied(runId, 'p1')).toBe(1)
    await ok.close()
  })

  it('commits steps with the position and fails loudly when a context reference is missing', async () => {
    const runId = `${prefix}-g`
    const run = await openRun(backend, runId, { handlers: handlers() })
    await backend.put('artifacts/report.md', new TextEncoder().encode('# report'))
    await run.commitStep(
      'research',
      { findings: 3 },
      {
        next: 'write',
        contextRefs: [{ kind: 'artifact', key: 'artifacts/report.md' }],
      },
    )
    expect(run.position).toEqual({ seq: 1, step: 'write' })
    await run.close()
    const resumed = await resumeRun(backend, runId, { handlers: handlers() })
    expect(resumed.position).toEqual({ seq: 1, step: 'write' })
    expect((await resumed.readStep(1))?.outputs).toEqual({ findings: 3 })
    await resumed.close()
    await backend.delete('artifacts/report.md')
    let caught: unknown
    try {
      await resumeRun(backend, runId, { handlers: handlers() })
    } catch (error) {
      caught = error
    }
    expect(caught).toMatchObject({
      code: 'RUN_CONTEXT_MISSING',
      context: { ref: { key: 'artifacts/report.md' } },
    })
    expect(await codeOf(resumeRun(backend, `${prefix}-never`, { handlers: handlers() }))).toBe(
      'RUN_NOT_FOUND',
    )
  })

  it('a stale owner whose lease expired cannot record an effect outcome or a step', async () => {
    const runId = `${prefix}-h`
    let release: () => void = () => undefined
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const deduping = paymentHandler(provider.url, { headers: () => ({ 'x-dedupe': '1' }) })
    const held = {
      pay: {
        ...deduping,
        dispatch: async (call: Parameters<typeof deduping.dispatch>[0]) => {
          await gate
          return deduping.dispatch(call)
        },
      },
    }
    // 1500 ms: the open's and the effect's own fenced writes must land inside the lease on a
    // loaded host (an S3 write took over 400 ms in CI); the wait outlasts it as before.
    const stale = await openRun(backend, runId, { handlers: held, leaseTtlMs: 1500 })
    const pending = codeOf(stale.effect('pay', 'late', { amount: 9 }))
    await new Promise((resolve) => setTimeout(resolve, 2200))
    // The new owner finds `late` submitted and absent at the target: retry-safe, so it dispatches again.
    const next = await openRun(fixture.create(), runId, {
      handlers: { pay: deduping },
      holder: 'new-owner',
    })
    const late = await readEffect(backend, runId, 'late')
    expect(late?.state).toBe('confirmed')
    expect(late?.history.at(-1)?.attemptId).toBe(next.attempt.attemptId)
    const effectBefore = await backend.head(runEffectKey(runId, 'late'))
    const headBefore = await backend.head(runHeadKey(runId))
    release()
    // The stale owner's own call reaches the target with the same idempotency key, but its outcome is refused.
    expect(await pending).toBe('LEASE_LOST')
    expect(await codeOf(stale.commitStep('s', {}))).toBe('LEASE_LOST')
    expect(await codeOf(stale.effect('pay', 'fresh', { amount: 1 }))).toBe('LEASE_LOST')
    expect(await readEffect(backend, runId, 'fresh')).toBeNull()
    expect((await backend.head(runEffectKey(runId, 'late')))?.version).toBe(effectBefore?.version)
    expect((await backend.head(runHeadKey(runId)))?.version).toBe(headBefore?.version)
    expect(await applied(runId, 'late')).toBe(1)
    expect(await next.effect('pay', 'late', { amount: 9 })).toMatchObject({ amount: 9 })
    await next.close()
    await stale.close()
  })

  it('a worker can own a run: one ownership covers both', async () => {
    const worker = await startWorker(backend, { workerId: `${prefix}-w`, holder: 'worker-host' })
    const lease = worker.lease
    if (lease === null) throw new Error('a running worker has a lease')
    const runId = `${prefix}-i`
    const run = await openRun(backend, runId, { handlers: handlers(), parentLease: lease })
    expect(run.attempt.holder).toBe('worker-host')
    await run.effect('pay', 'w1', { amount: 1 })
    expect(await codeOf(openRun(fixture.create(), runId, { handlers: handlers() }))).toBe(
      'RUN_OWNED',
    )
    await run.heartbeat()
    await run.close()
    // Close releases every lease the run took, the final effect's included, never the parent's.
    expect(await backend.getLease(runEffectKey(runId, 'w1'))).toBeNull()
    expect(await backend.getLease(runHeadKey(runId))).toBeNull()
    expect((await backend.getLease(lease.key))?.token).toBe(lease.token)
    await worker.complete({ result: null })
  })
})
