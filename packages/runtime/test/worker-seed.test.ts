import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  closeWorker,
  createWorkerEvents,
  firstHandled,
  inspectWorker,
  ResumeByPresets,
  type ResumeRegistration,
  resumeWorker,
  startWorker,
  suspendWorker,
  suspensionSchema,
  type WorkerEvent,
} from '../src/index.js'
import { workerSnapshotKey, workerSuspendRequestKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'

const SECRET_CONDITIONS = {
  trigger: { provider: 'github', id: 'pr-merged', config: { token: 'ghp_secret_token' } },
  timeout: { durationMinutes: 30 },
}

describe.each(BACKENDS)('seed 000 suspend semantics on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('the stored state decides a suspend of a handle that no longer runs', async () => {
    const first = await startWorker(fixture.create(), { workerId: 'w1', holder: 'a' })
    await first.suspend({ reason: 'first park' })
    const second = await resumeWorker(fixture.create(), 'w1', { holder: 'b' })
    const current = await second.suspend({ reason: 'second park' })
    // Not the old handle's cached Suspension: the one on storage now.
    expect(await first.suspend({ reason: 'ignored' })).toEqual(current)
    expect(current.reason).toBe('second park')
    await resumeWorker(fixture.create(), 'w1', { holder: 'c' })
    expect(await codeOf(first.suspend({ reason: 'x' }))).toBe('LEASE_LOST')
  })

  it('suspendWorker by id: idempotent for any caller, cooperative while running', async () => {
    const backend = fixture.create()
    const seen: WorkerEvent[] = []
    const events = createWorkerEvents()
    events.subscribe((event) => seen.push(event))
    const worker = await startWorker(backend, { workerId: 'w1', events })
    const outcome = await suspendWorker(fixture.create(), 'w1', {
      reason: 'operator wants a pause',
      conditions: { onEvent: 'go' },
    })
    expect(outcome).toMatchObject({
      status: 'requested',
      request: { reason: 'operator wants a pause', initiator: 'operator', requestedBy: 'operator' },
    })
    // A second request while one is pending leaves the first unchanged.
    const again = await suspendWorker(fixture.create(), 'w1', {
      reason: 'another',
      initiator: 'parent',
    })
    expect(again).toEqual(outcome)
    const pending = await worker.suspendRequested()
    expect(pending).toMatchObject({ reason: 'operator wants a pause', initiator: 'operator' })
    if (pending === null) throw new Error('no pending request')
    const suspension = await worker.suspend(pending)
    expect(suspension).toMatchObject({ initiator: 'operator', reason: 'operator wants a pause' })
    expect(await backend.head(workerSuspendRequestKey('w1'))).toBeNull()
    expect(seen).toHaveLength(1)

    const version = (await backend.head(workerSnapshotKey('w1')))?.version
    for (const caller of ['parent', 'operator'] as const) {
      const repeat = await suspendWorker(fixture.create(), 'w1', {
        reason: `${caller} again`,
        initiator: caller,
      })
      expect(repeat).toEqual({ status: 'suspended', suspension })
    }
    expect(await worker.suspend({ reason: 'handle again' })).toEqual(suspension)
    expect((await backend.head(workerSnapshotKey('w1')))?.version).toBe(version)
    expect(seen).toHaveLength(1)

    await closeWorker(backend, 'w1')
    expect(await codeOf(suspendWorker(backend, 'w1', { reason: 'late' }))).toBe(
      'WORKER_NOT_RUNNING',
    )
    const done = await startWorker(backend, { workerId: 'done' })
    await done.complete()
    expect(await codeOf(suspendWorker(backend, 'done', { reason: 'late' }))).toBe(
      'WORKER_NOT_RUNNING',
    )
    expect(await codeOf(suspendWorker(backend, 'nobody', { reason: 'x' }))).toBe('SNAPSHOT_MISSING')
  })

  it('a resume drops a leftover request; a recovery keeps the request for the dead run', async () => {
    const backend = fixture.create()
    const key = workerSuspendRequestKey('w1')
    // 1500 ms leases: each step's fenced writes must land inside them on a loaded host.
    const worker = await startWorker(backend, { workerId: 'w1', leaseTtlMs: 1500 })
    await suspendWorker(backend, 'w1', { reason: 'please park' })
    const leftover = (await backend.get(key))?.value
    if (leftover === undefined) throw new Error('no request stored')
    await worker.suspend({ reason: 'parked on its own' })
    expect(await backend.head(key)).toBeNull()
    await backend.put(key, leftover) // as if the clean-up after the suspend had failed
    const resumed = await resumeWorker(backend, 'w1', { leaseTtlMs: 1500 })
    expect(await resumed.suspendRequested()).toBeNull()

    await suspendWorker(backend, 'w1', { reason: 'park the resumed run' })
    await new Promise((resolve) => setTimeout(resolve, 1700)) // the owner dies, its lease expires
    const rescuer = await resumeWorker(backend, 'w1', { recoverRunning: true })
    expect(await rescuer.suspendRequested()).toMatchObject({ reason: 'park the resumed run' })
  })

  it('emits WorkerSuspended and WorkerCompleted once per transition', async () => {
    const events = createWorkerEvents()
    const seen: WorkerEvent[] = []
    const other: string[] = []
    const stop = events.subscribe((event) => seen.push(event))
    events.subscribe((event) => other.push(event.type))
    const worker = await startWorker(fixture.create(), { workerId: 'w1', events })
    const suspension = await worker.suspend({ reason: 'pause' })
    await worker.suspend({ reason: 'pause again' })
    expect(seen).toEqual([{ type: 'WorkerSuspended', workerId: 'w1', suspension }])
    const resumed = await resumeWorker(fixture.create(), 'w1', { events })
    await resumed.complete({ ok: true }, { iterations: 2 })
    expect(await codeOf(resumed.complete())).toBe('WORKER_NOT_RUNNING')
    expect(seen.map((event) => event.type)).toEqual(['WorkerSuspended', 'WorkerCompleted'])
    expect(seen[1]).toMatchObject({ workerId: 'w1', iterationsCompleted: 2 })
    stop()
    const next = await startWorker(fixture.create(), { workerId: 'w2', events })
    await next.complete()
    expect(seen).toHaveLength(2)
    expect(other).toEqual(['WorkerSuspended', 'WorkerCompleted', 'WorkerCompleted'])
  })

  it('the Suspension carries presence flags and ids, never condition payloads', async () => {
    const registered: ResumeRegistration[] = []
    const worker = await startWorker(fixture.create(), {
      workerId: 'w1',
      triggers: {
        register: (registration) => {
          registered.push(registration)
          return 'trig-1'
        },
      },
    })
    const suspension = await worker.suspend({ reason: 'wait', conditions: SECRET_CONDITIONS })
    expect(suspensionSchema.parse(suspension).conditions).toEqual({
      hasTrigger: true,
      hasTimeout: true,
      hasOnEvent: false,
      triggerId: 'pr-merged',
    })
    expect(JSON.stringify(suspension)).not.toContain('ghp_secret_token')
    const stored = await inspectWorker(fixture.create(), 'w1')
    expect(JSON.stringify(stored.suspension)).not.toContain('ghp_secret_token')
    // The payload stays in the snapshot, and reached the dispatcher that needs it.
    expect(stored.conditions?.trigger?.config).toEqual({ token: 'ghp_secret_token' })
    expect(registered[0]?.conditions.trigger?.config).toEqual({ token: 'ghp_secret_token' })
    expect(JSON.stringify(registered[0]?.suspension)).not.toContain('ghp_secret_token')
  })
})

describe.each(BACKENDS)('seed 000 resume responsibility on $name', (factory) => {
  let fixture: BackendFixture
  let counter = 0
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  type Options = Parameters<typeof startWorker>[1]
  type Request = Parameters<Awaited<ReturnType<typeof startWorker>>['suspend']>[0]
  async function park(options: Options, request: Omit<Request, 'reason'> = {}) {
    const workerId = `w${++counter}`
    const worker = await startWorker(fixture.create(), { ...options, workerId })
    const suspension = await worker.suspend({ reason: 'park', ...request })
    const stored = await inspectWorker(fixture.create(), workerId)
    const audits = stored.audit
      .filter((entry) => entry.event.startsWith('resume_by_'))
      .map((entry) => [entry.event, entry.detail])
    return { suspension, audits }
  }

  const triggers = { register: () => 'local-trigger' }
  const cloudSession = { register: () => 'cloud-trigger' }

  it('default resolution: parent LLM, local runtime, cloud then local', async () => {
    const open = await park({})
    expect(open.suspension).toMatchObject({
      resumeByMechanism: 'ResumeBy.parent_llm',
      autoResumeTrigger: null,
    })
    expect(open.audits).toEqual([
      [
        'resume_by_dispatched',
        { mechanism: 'ResumeBy.parent_llm', fallback: false, triggerId: null },
      ],
    ])
    const local = await park({ triggers }, { conditions: SECRET_CONDITIONS })
    expect(local.suspension).toMatchObject({
      resumeByMechanism: 'ResumeBy.local_runtime',
      autoResumeTrigger: 'local-trigger',
    })
    const cloud = await park({ triggers, cloudSession }, { conditions: SECRET_CONDITIONS })
    expect(cloud.suspension).toMatchObject({
      resumeByMechanism: 'ResumeBy.cloud_harness',
      autoResumeTrigger: 'cloud-trigger',
    })
  })

  it('presets, composition, and the fallback to the parent with audits', async () => {
    expect((await park({ resumeBy: ResumeByPresets.pipelineDrain })).suspension).toMatchObject({
      resumeByMechanism: 'ResumeBy.pipeline_drain',
    })
    const declined = await park({ resumeBy: ResumeByPresets.localRuntime, triggers })
    expect(declined.suspension.resumeByMechanism).toBe('ResumeBy.parent_llm')
    expect(declined.audits).toEqual([
      ['resume_by_declined', { mechanism: 'ResumeBy.local_runtime', reason: 'no_conditions' }],
      [
        'resume_by_dispatched',
        { mechanism: 'ResumeBy.parent_llm', fallback: true, triggerId: null },
      ],
    ])
    const composed = await park({
      resumeBy: firstHandled(
        ResumeByPresets.cloudHarness,
        ResumeByPresets.localRuntime,
        ResumeByPresets.pipelineDrain,
      ),
    })
    expect(composed.audits).toEqual([
      ['resume_by_declined', { mechanism: 'ResumeBy.cloud_harness', reason: 'no_cloud_session' }],
      ['resume_by_declined', { mechanism: 'ResumeBy.local_runtime', reason: 'no_conditions' }],
      [
        'resume_by_dispatched',
        { mechanism: 'ResumeBy.pipeline_drain', fallback: false, triggerId: null },
      ],
    ])
    const thrown = await park(
      {},
      {
        resumeBy: () => {
          throw new Error('callback bug')
        },
      },
    )
    expect(thrown.suspension.resumeByMechanism).toBe('ResumeBy.parent_llm')
    expect(thrown.audits[0]).toEqual([
      'resume_by_declined',
      { mechanism: 'unknown', reason: 'threw an error' },
    ])
    const custom = await park(
      {},
      { resumeBy: () => ({ handled: false, mechanism: 'custom', reason: 'busy' }) },
    )
    expect(custom.audits.map(([event]) => event)).toEqual([
      'resume_by_declined',
      'resume_by_dispatched',
    ])
    expect(custom.suspension.resumeByMechanism).toBe('ResumeBy.parent_llm')
  })

  it('the mechanism comes from the dispatch, not from a free string', async () => {
    const { suspension } = await park({}, {
      resumeByMechanism: 'made-up',
      autoResumeTrigger: 'made-up',
    } as Omit<Request, 'reason'>)
    expect(suspension.resumeByMechanism).toBe('ResumeBy.parent_llm')
    expect(suspension.autoResumeTrigger).toBeNull()
  })

  it('a trigger registration failure is TRIGGER_REGISTRATION_FAILED and the worker keeps running', async () => {
    const backend = fixture.create()
    const worker = await startWorker(backend, {
      workerId: 'w1',
      triggers: {
        register: () => {
          throw new Error('dispatcher down')
        },
      },
    })
    expect(await codeOf(worker.suspend({ reason: 'wait', conditions: SECRET_CONDITIONS }))).toBe(
      'TRIGGER_REGISTRATION_FAILED',
    )
    expect(worker.status).toBe('running')
    expect((await inspectWorker(backend, 'w1')).status).toBe('running')
    const noId = await startWorker(backend, {
      workerId: 'w2',
      triggers: { register: () => '' },
    })
    expect(await codeOf(noId.suspend({ reason: 'wait', conditions: SECRET_CONDITIONS }))).toBe(
      'TRIGGER_REGISTRATION_FAILED',
    )
  })
})
