import { isAgentStateError } from '@agent-state/core'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  closeWorker,
  inspectWorker,
  type LifecycleHookEvent,
  resumeWorker,
  startWorker,
  suspensionSchema,
} from '../src/index.js'
import { SNAPSHOT_SCHEMA_VERSION, workerSnapshotKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { withFailingPuts } from './failing-backend.js'
import { withRecording, withSkewedLeaseClock } from './recording-backend.js'

describe.each(BACKENDS)('worker lifecycle on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('runs, suspends, resumes in another instance and completes', async () => {
    const worker = await startWorker(fixture.create(), {
      workerId: 'w1',
      holder: 'host-a',
      state: { step: 1 },
      transcript: [{ role: 'user', content: 'secret transcript text' }],
    })
    expect(worker.status).toBe('running')
    await worker.checkpoint({ state: { step: 2 }, iterations: 1 })
    const suspension = await worker.suspend(
      {
        reason: 'waiting for review',
        initiator: 'self',
        conditions: { timeout: { durationMinutes: 30 } },
      },
      { iterations: 1, summary: 'drafted the plan' },
    )
    expect(worker.status).toBe('suspended')
    expect(worker.lease).toBeNull()
    expect(suspensionSchema.parse(suspension)).toEqual(suspension)
    expect(suspension).toMatchObject({
      status: 'suspended',
      handle: { workerId: 'w1', snapshotKey: workerSnapshotKey('w1') },
      reason: 'waiting for review',
      initiator: 'self',
      conditions: { hasTrigger: false, hasTimeout: true, hasOnEvent: false, triggerId: null },
      iterationsCompleted: 2,
      // Conditions and no cloud session: the local runtime registers them as wakes (wakes.md).
      resumeByMechanism: 'ResumeBy.local_runtime',
    })
    expect(suspension.autoResumeTrigger).toMatch(/^resume-[0-9a-f]{32}$/)
    expect(JSON.stringify(suspension)).not.toContain('secret transcript text')

    const resumed = await resumeWorker(fixture.create(), 'w1', {
      holder: 'host-b',
      input: { approved: true },
    })
    expect(resumed.status).toBe('running')
    expect(resumed.state).toEqual({ step: 2 })
    expect(resumed.summary).toBe('drafted the plan')
    expect(resumed.transcript).toEqual([{ role: 'user', content: 'secret transcript text' }])
    expect(resumed.resumeInput).toEqual({ approved: true })
    expect(resumed.lease?.holder).toBe('host-b')
    await resumed.complete({ answer: 42 }, { iterations: 1 })
    const final = await inspectWorker(fixture.create(), 'w1')
    expect(final).toMatchObject({
      status: 'done',
      result: { answer: 42 },
      iterationsCompleted: 3,
      owner: null,
    })
    expect(final.audit.map((entry) => entry.event)).toEqual([
      'worker_started',
      'resume_by_dispatched',
      'worker_suspended',
      'worker_resumed',
      // The resume by hand cancelled the timeout's wake (docs/runtime/wakes.md).
      'wakes_cancelled',
      'worker_completed',
    ])
    expect(final.audit.map((entry) => entry.holder)).toEqual([
      'host-a',
      'host-a',
      'host-a',
      'host-b',
      'host-b',
      'host-b',
    ])
  })

  it('suspend is idempotent and does not re-run hooks', async () => {
    const events: string[] = []
    const worker = await startWorker(fixture.create(), {
      workerId: 'w1',
      hooks: { postSuspend: () => void events.push('post') },
    })
    const first = await worker.suspend({ reason: 'pause' })
    const backend = fixture.create()
    const version = (await backend.head(workerSnapshotKey('w1')))?.version
    const second = await worker.suspend({ reason: 'another reason' })
    expect(second).toEqual(first)
    expect((await backend.head(workerSnapshotKey('w1')))?.version).toBe(version)
    expect(events).toEqual(['post'])
  })

  it('reports invalid transitions with stable codes', async () => {
    const backend = fixture.create()
    const done = await startWorker(backend, { workerId: 'done' })
    await done.complete()
    expect(await codeOf(done.suspend({ reason: 'x' }))).toBe('WORKER_NOT_RUNNING')
    expect(await codeOf(done.checkpoint())).toBe('WORKER_NOT_RUNNING')
    expect(await codeOf(resumeWorker(backend, 'done'))).toBe('WORKER_NOT_SUSPENDED')

    const running = await startWorker(backend, { workerId: 'running' })
    expect(await codeOf(resumeWorker(fixture.create(), 'running'))).toBe('WORKER_NOT_SUSPENDED')
    expect(await codeOf(closeWorker(fixture.create(), 'running'))).toBe('WORKER_NOT_SUSPENDED')
    expect(await codeOf(startWorker(fixture.create(), { workerId: 'running' }))).toBe(
      'WORKER_EXISTS',
    )
    expect(await codeOf(startWorker(fixture.create(), { workerId: 'done' }))).toBe('WORKER_EXISTS')

    await running.suspend({ reason: 'park' })
    expect(await codeOf(running.complete())).toBe('WORKER_NOT_RUNNING')
    await closeWorker(fixture.create(), 'running')
    await closeWorker(fixture.create(), 'running')
    expect(await codeOf(resumeWorker(fixture.create(), 'running'))).toBe('WORKER_CLOSED')
    // The state on storage decides, not the handle's cached Suspension (HARN-SUS-001).
    expect(await codeOf(running.suspend({ reason: 'y' }))).toBe('WORKER_NOT_RUNNING')
    expect((await inspectWorker(backend, 'running')).status).toBe('closed')

    expect(await codeOf(resumeWorker(backend, 'nobody'))).toBe('SNAPSHOT_MISSING')
    expect(await codeOf(resumeWorker(backend, '../x'))).toBe('INVALID_WORKER_ID')
    expect(await codeOf(startWorker(backend, { workerId: 'a/b' }))).toBe('INVALID_WORKER_ID')
  })

  it('validates the suspend reason, resume conditions and resume input', async () => {
    const backend = fixture.create()
    const worker = await startWorker(backend, { workerId: 'w1' })
    expect(await codeOf(worker.suspend({ reason: '   ' }))).toBe('INVALID_SUSPEND_REASON')
    const bad = [
      [{ timeout: { durationMinutes: 0 } }, 'timeout.durationMinutes'],
      [{ timeout: { durationMinutes: 1.5 } }, 'timeout.durationMinutes'],
      [{ onEvent: '  ' }, 'onEvent'],
      [{ trigger: { provider: 'GitHub!' } }, 'trigger.provider'],
      [{ surprise: true }, 'surprise'],
    ] as const
    for (const [conditions, path] of bad) {
      const error = await worker.suspend({ reason: 'r', conditions }).catch((e: unknown) => e)
      expect(isAgentStateError(error, 'INVALID_RESUME_CONDITIONS')).toBe(true)
      expect((error as { context: { path: string } }).context.path).toBe(path)
    }
    const unsupported = await worker
      .suspend({
        reason: 'r',
        conditions: { timeout: { durationMinutes: 5, onTimeout: 'explode' } },
      })
      .catch((e: unknown) => e)
    expect(isAgentStateError(unsupported, 'UNSUPPORTED_TIMEOUT_ACTION')).toBe(true)
    expect((unsupported as { context: { path: string } }).context.path).toBe('timeout.onTimeout')
    expect(await codeOf(worker.suspend({ reason: 'r', initiator: 'boss' as 'self' }))).toBe(
      'INVALID_INITIATOR',
    )
    expect(await codeOf(worker.complete({ at: new Date() } as never))).toBe('INVALID_WORKER_RESULT')
    expect(worker.status).toBe('running')
    await worker.suspend({
      reason: 'wait',
      conditions: { onEvent: 'deploys' },
    })
    expect(await codeOf(resumeWorker(backend, 'w1', { input: { at: new Date() } }))).toBe(
      'INVALID_RESUME_INPUT',
    )
    const inputSchema = z.object({ approved: z.boolean() })
    expect(
      await codeOf(resumeWorker(backend, 'w1', { input: { approved: 'yes' }, inputSchema })),
    ).toBe('INVALID_RESUME_INPUT')
    const resumed = await resumeWorker(backend, 'w1', { input: { approved: true }, inputSchema })
    expect(resumed.resumeInput).toEqual({ approved: true })
  })

  it('persists before flipping: a failed persist leaves the worker running', async () => {
    const failing = withFailingPuts(fixture.create())
    const worker = await startWorker(failing, { workerId: 'w1', state: { n: 1 } })
    failing.failPuts = true
    expect(await codeOf(worker.suspend({ reason: 'pause' }, { state: { n: 2 } }))).toBe(
      'UNAVAILABLE',
    )
    expect(failing.refused).toBe(1)
    expect(worker.status).toBe('running')
    expect(worker.suspension).toBeNull()
    expect(worker.state).toEqual({ n: 1 })
    expect(worker.lease).not.toBeNull()
    expect((await inspectWorker(failing, 'w1')).status).toBe('running')
    expect(await codeOf(resumeWorker(fixture.create(), 'w1'))).toBe('WORKER_NOT_SUSPENDED')
    failing.failPuts = false
    await worker.suspend({ reason: 'pause' }, { state: { n: 2 } })
    expect(worker.status).toBe('suspended')
    expect(await inspectWorker(failing, 'w1')).toMatchObject({
      status: 'suspended',
      state: { n: 2 },
    })
  })

  it('a failed resume persist releases the lease and leaves the worker suspended', async () => {
    const worker = await startWorker(fixture.create(), { workerId: 'w1' })
    await worker.suspend({ reason: 'pause' })
    const failing = withFailingPuts(fixture.create())
    failing.failPuts = true
    expect(await codeOf(resumeWorker(failing, 'w1'))).toBe('UNAVAILABLE')
    expect(await fixture.create().getLease(workerSnapshotKey('w1'))).toBeNull()
    expect((await inspectWorker(failing, 'w1')).status).toBe('suspended')
    expect((await resumeWorker(fixture.create(), 'w1')).status).toBe('running')
  })

  it('concurrent resumes: exactly one wins, the others get CONCURRENT_RESUME', async () => {
    const worker = await startWorker(fixture.create(), { workerId: 'w1' })
    await worker.suspend({ reason: 'pause' })
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        resumeWorker(fixture.create(), 'w1', { holder: `resumer-${i}` }).then(
          (w) => `won:${w.lease?.holder}`,
          (error: unknown) => (isAgentStateError(error) ? error.code : String(error)),
        ),
      ),
    )
    const winners = outcomes.filter((o) => o.startsWith('won:'))
    expect(winners).toHaveLength(1)
    // Deterministic: every loser gets CONCURRENT_RESUME (HARN-SUS-006), never WORKER_NOT_SUSPENDED.
    expect(outcomes.filter((o) => !o.startsWith('won:'))).toEqual(
      Array.from({ length: 5 }, () => 'CONCURRENT_RESUME'),
    )
    // A latecomer that looks only after the winner flipped the state gets the same code.
    expect(await codeOf(resumeWorker(fixture.create(), 'w1', { holder: 'late' }))).toBe(
      'CONCURRENT_RESUME',
    )
    const stored = await inspectWorker(fixture.create(), 'w1')
    expect(stored.owner?.holder).toBe(winners[0]?.slice(4))
  })

  it('fences a stale owner: its writes after a takeover fail with LEASE_LOST', async () => {
    const backend = withRecording(fixture.create())
    const stale = await startWorker(backend, {
      workerId: 'w1',
      holder: 'old',
      // Long enough for startWorker's own fenced writes: with 200 ms, a clean run with four
      // suites at once (SQLite's group commit behind other writes) lost the lease inside it.
      leaseTtlMs: 1000,
      state: 'old',
    })
    // The old owner stalls past its lease; an operator takes the lease over.
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const takeover = await fixture
      .create()
      .acquireLease(workerSnapshotKey('w1'), { holder: 'new', ttlMs: 60_000 })
    const staleToken = stale.lease?.token ?? 0
    backend.calls.length = 0
    expect(await codeOf(stale.checkpoint({ state: 'stale write' }))).toBe('LEASE_LOST')
    expect(await codeOf(stale.suspend({ reason: 'late' }))).toBe('LEASE_LOST')
    // The refusal comes from the fenced write itself, not from a renewal before it.
    const snapshotWrites = { op: 'put', key: workerSnapshotKey('w1'), token: staleToken }
    expect(backend.calls).toEqual([
      { ...snapshotWrites, outcome: 'LEASE_LOST' },
      { ...snapshotWrites, outcome: 'LEASE_LOST' },
    ])
    expect(stale.status).toBe('running')
    expect((await inspectWorker(backend, 'w1')).state).toBe('old')
    expect(takeover.token).toBeGreaterThan(stale.lease?.token ?? Number.POSITIVE_INFINITY)
  })

  it('heartbeat renews the lease while running and is refused afterwards', async () => {
    const backend = fixture.create()
    // Generous margins: the machine running the tests may be busy.
    const worker = await startWorker(backend, { workerId: 'w1', leaseTtlMs: 1500 })
    const before = worker.lease?.expiresAt ?? 0
    await new Promise((resolve) => setTimeout(resolve, 700))
    await worker.heartbeat()
    expect(worker.lease?.expiresAt ?? 0).toBeGreaterThan(before)
    await new Promise((resolve) => setTimeout(resolve, 1000))
    // Past the first expiry: without the heartbeat this write would be LEASE_LOST.
    expect(Date.now()).toBeGreaterThan(before)
    await worker.checkpoint({ state: 'still mine' })
    expect((await inspectWorker(backend, 'w1')).state).toBe('still mine')
    await worker.suspend({ reason: 'pause' })
    expect(await codeOf(worker.heartbeat())).toBe('WORKER_NOT_RUNNING')
  })

  it('renews on the lease clock: a skewed server clock neither stops nor forces renewals', async () => {
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
    // Server an hour behind: comparing its expiresAt with Date.now() would renew on every write.
    const behind = withSkewedLeaseClock(fixture.create(), -3_600_000)
    const other = await startWorker(behind, { workerId: 'behind', leaseTtlMs: 6000 })
    await other.checkpoint({ state: 'fresh lease' })
    expect(behind.renewals).toBe(0)
    // Server an hour ahead: that comparison would never renew. Started after the other worker's
    // writes, and each sleep counted from when the lease was surely requested (once a loaded S3's
    // writes took so long that the lease had lapsed before the first write below).
    const ahead = withSkewedLeaseClock(fixture.create(), 3_600_000)
    const ttl = 6000
    const worker = await startWorker(ahead, { workerId: 'ahead', leaseTtlMs: ttl })
    const started = performance.now() // the lease was requested before this
    await sleep(ttl / 2 + 100)
    const renewing = performance.now()
    await worker.checkpoint({ state: 1 }) // past half the TTL: renews
    expect(ahead.renewals).toBe(1)
    await sleep(Math.max(0, started + ttl + 100 - performance.now()))
    expect(performance.now() - renewing).toBeLessThan(ttl) // the renewed lease still runs
    // Past the first expiry: only the renewal above keeps this write ours.
    await worker.checkpoint({ state: 2 })
    expect((await inspectWorker(fixture.create(), 'ahead')).state).toBe(2)
  }, 60_000)

  it('a resumed owner supersedes the previous handle of the same worker', async () => {
    const first = await startWorker(fixture.create(), { workerId: 'w1', holder: 'a' })
    await first.suspend({ reason: 'pause' })
    const second = await resumeWorker(fixture.create(), 'w1', { holder: 'b' })
    expect(await codeOf(first.checkpoint())).toBe('WORKER_NOT_RUNNING')
    await second.checkpoint({ state: 'b owns it' })
    expect((await inspectWorker(fixture.create(), 'w1')).owner?.holder).toBe('b')
  })

  it('continueTranscript true adds a one-shot reminder; false resumes from summary and input', async () => {
    const backend = fixture.create()
    const worker = await startWorker(backend, {
      workerId: 'w1',
      transcript: ['t1', 't2'],
      summary: 'so far',
    })
    await worker.suspend({ reason: 'need input' })
    const kept = await resumeWorker(backend, 'w1', { input: 'go on', cause: 'operator' })
    expect(kept.transcript).toEqual(['t1', 't2'])
    const reminder = kept.takeResumeReminder()
    expect(reminder).toMatchObject({ kind: 'system_reminder', dedupeKey: 'resume_continuity' })
    expect(reminder?.text).toContain('need input')
    expect(reminder?.text).toContain('operator')
    expect(reminder?.text).not.toContain('go on')
    expect(kept.takeResumeReminder()).toBeNull()
    await kept.checkpoint()
    expect((await inspectWorker(backend, 'w1')).resume?.reminder).toBeNull()
    await kept.suspend({ reason: 'again' })
    const fresh = await resumeWorker(backend, 'w1', {
      continueTranscript: false,
      input: 'new plan',
    })
    expect(fresh.transcript).toEqual([])
    expect(fresh.summary).toBe('so far')
    expect(fresh.resumeInput).toBe('new plan')
    expect(fresh.takeResumeReminder()).toBeNull()
    // Starting over does not destroy the stored transcript: it is archived in the snapshot.
    const archived = await inspectWorker(fixture.create(), 'w1')
    expect(archived.transcript).toEqual([])
    expect(archived.transcriptArchive.map((entry) => entry.events)).toEqual([['t1', 't2']])
    await fresh.checkpoint({ transcript: ['n1'] })
    await fresh.suspend({ reason: 'third' })
    const third = await resumeWorker(backend, 'w1', { continueTranscript: false })
    expect(third.transcript).toEqual([])
    expect(third.transcriptArchive.map((entry) => entry.events)).toEqual([['t1', 't2'], ['n1']])
  })

  it('pre-hooks can deny, with an audit entry; hook payloads hold no transcript or input', async () => {
    const seen: LifecycleHookEvent[] = []
    const backend = fixture.create()
    const worker = await startWorker(backend, {
      workerId: 'w1',
      transcript: ['private words'],
      hooks: {
        preSuspend: (event) => {
          seen.push(event)
          return event.reason === 'forbidden' ? { decision: 'deny', reason: 'policy' } : undefined
        },
      },
    })
    expect(await codeOf(worker.suspend({ reason: 'forbidden' }))).toBe('SUSPEND_DENIED')
    expect(worker.status).toBe('running')
    await worker.suspend({ reason: 'fine', conditions: { onEvent: 'topic' } })
    const denyResume = {
      preResume: (event: LifecycleHookEvent) => {
        seen.push(event)
        return { decision: 'deny' as const, reason: 'not yet' }
      },
    }
    expect(
      await codeOf(resumeWorker(backend, 'w1', { input: 'secret input', hooks: denyResume })),
    ).toBe('RESUME_DENIED')
    expect(await backend.getLease(workerSnapshotKey('w1'))).toBeNull()
    const stored = await inspectWorker(backend, 'w1')
    expect(stored.status).toBe('suspended')
    expect(stored.audit.map((entry) => entry.event)).toEqual([
      'worker_started',
      'pre_suspend_denied',
      'resume_by_dispatched',
      'worker_suspended',
      'pre_resume_denied',
    ])
    expect(seen.map((event) => [event.phase, event.reason, event.hasOnEvent])).toEqual([
      ['suspend', 'forbidden', false],
      ['suspend', 'fine', true],
      ['resume', 'fine', true],
    ])
    expect(JSON.stringify(seen)).not.toMatch(/private words|secret input/)
    const post: string[] = []
    const resumed = await resumeWorker(backend, 'w1', {
      hooks: {
        preResume: () => ({ decision: 'allow' }),
        postResume: (e) => void post.push(e.phase),
      },
    })
    expect(resumed.status).toBe('running')
    expect(post).toEqual(['resume'])
  })

  it('rejects a corrupt, tampered or newer snapshot loudly', async () => {
    const backend = fixture.create()
    const worker = await startWorker(backend, { workerId: 'w1', state: { balance: 10 } })
    await worker.suspend({ reason: 'pause' })
    const key = workerSnapshotKey('w1')
    const original = (await backend.get(key))?.value as Uint8Array
    const text = new TextDecoder().decode(original)
    const put = (body: string) => backend.put(key, new TextEncoder().encode(body))

    await put(text.replace('"balance":10', '"balance":99'))
    expect(await codeOf(resumeWorker(backend, 'w1'))).toBe('SNAPSHOT_CORRUPT')
    // The error names where the damaged snapshot is.
    const corrupt = await closeWorker(backend, 'w1').catch((error: unknown) => error)
    expect((corrupt as { context: { key: string } }).context.key).toBe(key)
    await put(text.slice(0, text.length / 2))
    expect(await codeOf(resumeWorker(backend, 'w1'))).toBe('SNAPSHOT_CORRUPT')
    await put(text.replace('"schemaVersion":2', `"schemaVersion":${SNAPSHOT_SCHEMA_VERSION + 1}`))
    expect(await codeOf(resumeWorker(backend, 'w1'))).toBe('SNAPSHOT_INCOMPATIBLE')
    expect(await codeOf(inspectWorker(backend, 'w1'))).toBe('SNAPSHOT_INCOMPATIBLE')
    await backend.put(key, original)
    expect((await resumeWorker(backend, 'w1')).state).toEqual({ balance: 10 })
  })
})

describe.each(BACKENDS)('recovering a worker whose owner is gone on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('takes over only with recoverRunning, only once the lease is gone', async () => {
    const crashed = await startWorker(fixture.create(), {
      workerId: 'w1',
      holder: 'crashed',
      leaseTtlMs: 1000,
      state: 1,
    })
    const backend = fixture.create()
    // While the owner's lease is live, even recovery loses.
    expect(await codeOf(resumeWorker(backend, 'w1', { recoverRunning: true }))).toBe(
      'CONCURRENT_RESUME',
    )
    await new Promise((resolve) => setTimeout(resolve, 1100))
    expect(await codeOf(resumeWorker(backend, 'w1'))).toBe('WORKER_NOT_SUSPENDED')
    const recovered = await resumeWorker(backend, 'w1', { recoverRunning: true, holder: 'rescuer' })
    expect(recovered.state).toBe(1)
    expect(recovered.takeResumeReminder()?.text).toContain('stopped without suspending')
    expect(await codeOf(crashed.checkpoint({ state: 'zombie' }))).toBe('LEASE_LOST')
    const stored = await inspectWorker(backend, 'w1')
    expect(stored.owner?.holder).toBe('rescuer')
    expect(stored.audit.at(-1)).toMatchObject({
      event: 'worker_recovered',
      detail: { previousOwner: 'crashed' },
    })
  })
})
