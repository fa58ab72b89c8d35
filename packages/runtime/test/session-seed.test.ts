import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  type ConflictWarning,
  handoffKeyName,
  inspectSession,
  openSession,
  resumeSession,
  stateHandleSchema,
} from '../src/index.js'
import { HANDOFF_KEY, sessionDataPrefix } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'

describe.each(BACKENDS)('seed 004 sessions on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('a reopened session keeps the policy it was opened with', async () => {
    const a = await openSession(fixture.create(), {
      sessionId: 's',
      writer: 'a',
      conflictPolicy: 'error',
    })
    await a.write('plan.md', 'by a')
    // Reopened as the README shows, without choosing a policy: the session's `error` applies.
    const b = await resumeSession(fixture.create(), 's', { writer: 'b' })
    expect(b.conflictPolicy).toBe('error')
    expect(b.policyOverride).toBeNull()
    expect(await codeOf(b.write('plan.md', 'by b'))).toBe('WRITER_CONFLICT')
    const c = await openSession(fixture.create(), { sessionId: 's', writer: 'c' })
    expect(c.conflictPolicy).toBe('error')
    expect(await codeOf(c.delete('plan.md'))).toBe('WRITER_CONFLICT')
    expect(await a.read('plan.md')).toBe('by a')
  })

  it('a weaker policy is explicit and recorded; a stronger one is not an override', async () => {
    const backend = fixture.create()
    await openSession(backend, { sessionId: 's', writer: 'a', conflictPolicy: 'warn' })
    const strict = await resumeSession(fixture.create(), 's', {
      writer: 'x',
      conflictPolicy: 'error',
    })
    expect(strict.conflictPolicy).toBe('error')
    expect(strict.policyOverride).toBeNull()
    const lax = await resumeSession(fixture.create(), 's', {
      writer: 'b',
      conflictPolicy: 'ignore',
    })
    expect(lax.conflictPolicy).toBe('ignore')
    expect(lax.sessionConflictPolicy).toBe('warn')
    expect(lax.policyOverride).toMatchObject({ writerId: 'b', policy: 'ignore' })
    const info = await inspectSession(fixture.create(), 's')
    expect(info.conflictPolicy).toBe('warn')
    expect(info.policyOverrides).toEqual([lax.policyOverride])
  })

  it('handoff goes through the conflict policy', async () => {
    const a = await openSession(fixture.create(), {
      sessionId: 's',
      writer: 'a',
      conflictPolicy: 'error',
    })
    await a.handoff({ status: 'from a' })
    const b = await resumeSession(fixture.create(), 's', { writer: 'b' })
    expect(await codeOf(b.handoff({ status: 'from b' }))).toBe('WRITER_CONFLICT')
    expect((await b.readHandoff())?.summary).toEqual({ status: 'from a' })

    const warnings: ConflictWarning[] = []
    const w = await resumeSession(fixture.create(), 's', {
      writer: 'w',
      conflictPolicy: 'warn',
      onConflict: (warning) => warnings.push(warning),
    })
    await w.handoff({ status: 'from w' })
    expect(warnings.map((x) => [x.key, x.operation, x.previousWriter?.writerId])).toEqual([
      [HANDOFF_KEY, 'write', 'a'],
    ])
    expect((await a.readHandoff())?.summary).toEqual({ status: 'from w' })
  })

  it('exposes the stable handle shape, without credentials', async () => {
    const backend = fixture.create()
    const session = await openSession(backend, {
      sessionId: 'review-42',
      writer: 'triage',
      conflictPolicy: 'warn',
      location: 'redis://agent:hunter2@127.0.0.1:6379/0?password=hunter3&namespace=n',
    })
    expect(stateHandleSchema.parse(session.handle)).toEqual({
      _type: 'state_handle',
      backend: backend.name,
      root: 'redis://127.0.0.1:6379/0?password=redacted&namespace=n',
      sessionId: 'review-42',
      handoffKey: 'handoff.json',
      conflictPolicy: 'warn',
      writer: {
        writerId: 'triage',
        stageId: 'triage',
        sessionId: 'review-42',
        workerId: 'triage',
      },
    })
    expect(JSON.stringify(session.handle)).not.toMatch(/hunter/)
    const plain = await resumeSession(backend, 'review-42', { writer: 'x', location: '/srv/state' })
    expect(plain.handle.root).toBe('/srv/state')
    expect((await resumeSession(backend, 'review-42', { writer: 'y' })).handle.root).toBeNull()
    expect(handoffKeyName()).toBe('handoff.json')
    expect((await session.handoff({ ok: true })).key).toBe(handoffKeyName())
  })

  it('fills stageId and workerId from writerId when absent, also in stored metadata', async () => {
    const backend = fixture.create()
    const session = await openSession(backend, {
      sessionId: 's',
      writer: { writerId: 'planner', stageId: 'plan' },
    })
    expect(session.writer).toEqual({
      writerId: 'planner',
      stageId: 'plan',
      workerId: 'planner',
      sessionId: 's',
    })
    await session.write('k', 'v')
    expect((await backend.head(`${sessionDataPrefix('s')}k`))?.writer).toEqual(session.writer)
  })
})
