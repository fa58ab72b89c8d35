import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { type ConflictWarning, listSessions, openSession, resumeSession } from '../src/index.js'
import { handoffKey, sessionMarkerKey } from '../src/internal.js'
import { BACKENDS, type BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'

/** A writer identity with the seed's defaults filled in. */
const identity = (writerId: string, sessionId: string) => ({
  writerId,
  stageId: writerId,
  workerId: writerId,
  sessionId,
})

describe.each(BACKENDS)('sessions on $name', (factory) => {
  let fixture: BackendFixture
  beforeEach(() => {
    fixture = factory.setup()
  })
  afterEach(async () => {
    await fixture.cleanup()
  })

  it('creates a session with a UUIDv7 id and reopens it', async () => {
    const backend = fixture.create()
    const session = await openSession(backend, { writer: 'planner' })
    expect(session.sessionId).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    )
    // Seed 004: stageId and workerId default to the writer id.
    expect(session.writer).toEqual({
      writerId: 'planner',
      stageId: 'planner',
      workerId: 'planner',
      sessionId: session.sessionId,
    })
    await session.write('plan.md', '# Plan')
    const again = await openSession(fixture.create(), {
      sessionId: session.sessionId,
      writer: 'planner',
    })
    expect(await again.read('plan.md')).toBe('# Plan')
  })

  it('resumeSession fails with SESSION_NOT_FOUND for an unknown session', async () => {
    const backend = fixture.create()
    expect(await codeOf(resumeSession(backend, 'never-opened', { writer: 'w' }))).toBe(
      'SESSION_NOT_FOUND',
    )
    await openSession(backend, { sessionId: 'opened', writer: 'w' })
    const resumed = await resumeSession(fixture.create(), 'opened', { writer: 'w2' })
    expect(resumed.sessionId).toBe('opened')
  })

  it('rejects session ids that could escape or collide', async () => {
    const backend = fixture.create()
    for (const bad of [
      '',
      '.',
      '..',
      '../x',
      'a/b',
      '.hidden',
      '.as~x',
      'a\\b',
      'a b',
      'x'.repeat(129),
      'é',
    ]) {
      expect(await codeOf(openSession(backend, { sessionId: bad, writer: 'w' }))).toBe(
        'INVALID_SESSION_ID',
      )
    }
    expect(await codeOf(resumeSession(backend, '../escape', { writer: 'w' }))).toBe(
      'INVALID_SESSION_ID',
    )
    const page = await backend.list({})
    expect(page.entries).toEqual([])
  })

  it('writes and reads text and bytes; read is null when missing', async () => {
    const session = await openSession(fixture.create(), { sessionId: 's1', writer: 'w' })
    await session.write('notes/ünï 🧪.txt', 'hello 🌍')
    expect(await session.read('notes/ünï 🧪.txt')).toBe('hello 🌍')
    const bytes = new Uint8Array([0, 255, 128, 1])
    await session.write('blob.bin', bytes)
    expect(await session.readBytes('blob.bin')).toEqual(bytes)
    expect(await codeOf(session.read('blob.bin'))).toBe('INVALID_ARGUMENT')
    expect(await session.read('missing')).toBeNull()
    expect(await session.readBytes('missing')).toBeNull()
  })

  it('rejects invalid user keys without writing', async () => {
    const backend = fixture.create()
    const session = await openSession(backend, { sessionId: 's1', writer: 'w' })
    for (const bad of [
      '',
      '/abs',
      '../up',
      'a/../b',
      'a//b',
      'x/',
      'a\\b',
      '.as~meta',
      'x'.repeat(1100),
    ]) {
      expect(await codeOf(session.write(bad, 'x'))).toBe('INVALID_KEY')
    }
    expect(await session.list()).toEqual([])
  })

  it('lists recursively in byte order with internals hidden, across pages', async () => {
    const session = await openSession(fixture.create(), { sessionId: 's1', writer: 'w' })
    const keys = [
      'b',
      'a/z',
      'a/b/c',
      'A',
      '~',
      'é',
      '😀',
      '\u{E000}',
      'session.json',
      'handoff.json',
    ]
    for (const key of keys) await session.write(key, key)
    await session.handoff({ status: 'ready' })
    // More keys than one backend page would need to be stitched when the limit is small.
    for (let i = 0; i < 30; i++) await session.write(`many/${String(i).padStart(2, '0')}`, 'x')
    const listed = await session.list()
    const expected = [
      ...keys,
      ...Array.from({ length: 30 }, (_, i) => `many/${String(i).padStart(2, '0')}`),
    ].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))
    expect(listed).toEqual(expected)
  })

  it('delete is idempotent', async () => {
    const session = await openSession(fixture.create(), { sessionId: 's1', writer: 'w' })
    await session.write('k', 'v')
    expect(await session.delete('k')).toBe(true)
    expect(await session.delete('k')).toBe(false)
    expect(await session.read('k')).toBeNull()
  })

  it('keeps sessions apart', async () => {
    const backend = fixture.create()
    const a = await openSession(backend, { sessionId: 'a', writer: 'w' })
    const ab = await openSession(backend, { sessionId: 'ab', writer: 'w' })
    await a.write('k', 'from a')
    await ab.write('k', 'from ab')
    expect(await a.read('k')).toBe('from a')
    expect(await a.list()).toEqual(['k'])
    expect(await ab.list()).toEqual(['k'])
  })

  it('writes a versioned handoff envelope and keeps a typed artifact', async () => {
    const session = await openSession(fixture.create(), {
      sessionId: 'review-42',
      writer: 'triage',
    })
    expect(await session.readHandoff()).toBeNull()
    const artifact = {
      _type: 'handoff_artifact',
      source_persona: 'merge_captain',
      target_persona_or_human: { kind: 'human', label: 'maintainer' },
      task: 'Approve the rollout window',
      reason: 'A human must authorize production side effects',
    }
    await session.handoff({ status: 'ready', handoff: artifact })
    const reader = await resumeSession(fixture.create(), 'review-42', { writer: 'implement' })
    const envelope = await reader.readHandoff()
    expect(envelope).toMatchObject({
      _type: 'agent_state_handoff',
      version: 1,
      session_id: 'review-42',
      key: 'handoff.json',
      writer: { writerId: 'triage', sessionId: 'review-42' },
      handoff: artifact,
      summary: { status: 'ready', handoff: artifact },
    })
    await session.handoff({ status: 'needs_review', next_stage: 'implement' })
    const plain = await reader.readHandoff()
    expect(plain?.handoff).toBeUndefined()
    expect(plain?.summary).toEqual({ status: 'needs_review', next_stage: 'implement' })
    await session.handoff(artifact)
    expect((await reader.readHandoff())?.handoff).toEqual(artifact)
  })

  it('rejects a summary that is not plain JSON', async () => {
    const session = await openSession(fixture.create(), { sessionId: 's1', writer: 'w' })
    expect(await codeOf(session.handoff({ when: new Date() }))).toBe('INVALID_HANDOFF')
    expect(await codeOf(session.handoff({ n: Number.NaN }))).toBe('INVALID_HANDOFF')
    expect(await session.readHandoff()).toBeNull()
  })

  it('reports a corrupt or newer handoff with a stable code, never as empty', async () => {
    const backend = fixture.create()
    const session = await openSession(backend, { sessionId: 's1', writer: 'w' })
    const encode = (text: string) => new TextEncoder().encode(text)
    await backend.put(handoffKey('s1'), encode('{"_type":"agent_state_handoff",'))
    expect(await codeOf(session.readHandoff())).toBe('HANDOFF_CORRUPT')
    await session.handoff({ ok: true })
    const stored = JSON.parse(
      new TextDecoder().decode((await backend.get(handoffKey('s1')))?.value),
    )
    await backend.put(handoffKey('s1'), encode(JSON.stringify({ ...stored, summary: undefined })))
    expect(await codeOf(session.readHandoff())).toBe('HANDOFF_CORRUPT')
    await backend.put(handoffKey('s1'), encode(JSON.stringify({ ...stored, session_id: 'other' })))
    expect(await codeOf(session.readHandoff())).toBe('HANDOFF_CORRUPT')
    await backend.put(handoffKey('s1'), encode(JSON.stringify({ ...stored, version: 2 })))
    expect(await codeOf(session.readHandoff())).toBe('HANDOFF_INCOMPATIBLE')
  })

  it('reopening over a corrupt marker fails with CORRUPT', async () => {
    const backend = fixture.create()
    await backend.put(sessionMarkerKey('broken'), new TextEncoder().encode('not json'))
    expect(await codeOf(openSession(backend, { sessionId: 'broken', writer: 'w' }))).toBe('CORRUPT')
    expect(await codeOf(resumeSession(backend, 'broken', { writer: 'w' }))).toBe('CORRUPT')
  })

  it('lists all sessions page by page', async () => {
    const backend = fixture.create()
    const ids = Array.from({ length: 7 }, (_, i) => `s-${i}`)
    for (const id of ids) {
      const session = await openSession(backend, { sessionId: id, writer: 'w' })
      await session.write('deep/nested/key', 'x')
    }
    const seen: string[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const page = await listSessions(
        backend,
        cursor === undefined ? { limit: 3 } : { limit: 3, cursor },
      )
      expect(page.sessions.length).toBeLessThanOrEqual(3)
      seen.push(...page.sessions)
      cursor = page.cursor
      pages++
    } while (cursor !== undefined)
    expect(seen).toEqual(ids)
    expect(pages).toBeGreaterThanOrEqual(3)
  })

  describe('writer conflict policies', () => {
    it('ignore overwrites silently', async () => {
      const backend = fixture.create()
      const a = await openSession(backend, {
        sessionId: 's',
        writer: 'a',
        conflictPolicy: 'ignore',
      })
      const b = await openSession(backend, {
        sessionId: 's',
        writer: 'b',
        conflictPolicy: 'ignore',
      })
      await a.write('k', 'from a')
      await b.write('k', 'from b')
      expect(await a.read('k')).toBe('from b')
      expect((await backend.head('sessions/s/data/k'))?.writer).toEqual(identity('b', 's'))
    })

    it('warn writes and reports through the hook', async () => {
      const backend = fixture.create()
      const warnings: ConflictWarning[] = []
      const a = await openSession(backend, { sessionId: 's', writer: 'a', conflictPolicy: 'warn' })
      const b = await openSession(backend, {
        sessionId: 's',
        writer: 'b',
        conflictPolicy: 'warn',
        onConflict: (warning) => warnings.push(warning),
      })
      await a.write('k', 'from a')
      await b.write('k', 'from b')
      await b.write('k', 'again from b')
      expect(await a.read('k')).toBe('again from b')
      expect(warnings).toEqual([
        {
          code: 'WRITER_CONFLICT',
          sessionId: 's',
          key: 'k',
          operation: 'write',
          previousWriter: identity('a', 's'),
          writer: identity('b', 's'),
        },
      ])
    })

    it('warn without a hook emits a process warning', async () => {
      const backend = fixture.create()
      const a = await openSession(backend, { sessionId: 's', writer: 'a' })
      const b = await openSession(backend, { sessionId: 's', writer: 'b', conflictPolicy: 'warn' })
      await a.write('k', '1')
      const seen: Error[] = []
      const listener = (warning: Error) => seen.push(warning)
      process.on('warning', listener)
      try {
        await b.write('k', '2')
        await new Promise((resolve) => setImmediate(resolve))
      } finally {
        process.off('warning', listener)
      }
      expect(seen.map((w) => (w as Error & { code?: string }).code)).toEqual(['WRITER_CONFLICT'])
    })

    it('error refuses to overwrite or delete another writer’s key', async () => {
      const backend = fixture.create()
      const a = await openSession(backend, { sessionId: 's', writer: 'a', conflictPolicy: 'error' })
      const b = await openSession(backend, { sessionId: 's', writer: 'b', conflictPolicy: 'error' })
      await a.write('k', 'from a')
      await a.write('k', 'a again')
      expect(await codeOf(b.write('k', 'from b'))).toBe('WRITER_CONFLICT')
      expect(await codeOf(b.delete('k'))).toBe('WRITER_CONFLICT')
      expect(await b.read('k')).toBe('a again')
      expect(await a.delete('k')).toBe(true)
      await b.write('k', 'now b may')
      expect(await a.read('k')).toBe('now b may')
    })

    it('under error, N concurrent writers of a fresh key: exactly one succeeds', async () => {
      const sessions = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          openSession(fixture.create(), {
            sessionId: 'race',
            writer: `w${i}`,
            conflictPolicy: 'error',
          }),
        ),
      )
      for (let round = 0; round < 5; round++) {
        const key = `k${round}`
        const outcomes = await Promise.all(
          sessions.map((s) => codeOf(s.write(key, s.writer.writerId))),
        )
        const winners = outcomes.flatMap((code, i) => (code === 'resolved' ? [i] : []))
        expect(winners).toHaveLength(1)
        expect(outcomes.filter((code) => code === 'WRITER_CONFLICT')).toHaveLength(
          sessions.length - 1,
        )
        const winner = sessions[winners[0] as number]
        expect(await winner?.read(key)).toBe(winner?.writer.writerId)
      }
    })

    it('under error, concurrent writers of another writer’s key all fail', async () => {
      const owner = await openSession(fixture.create(), {
        sessionId: 'race',
        writer: 'owner',
        conflictPolicy: 'error',
      })
      await owner.write('k', 'mine')
      const others = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          openSession(fixture.create(), {
            sessionId: 'race',
            writer: `w${i}`,
            conflictPolicy: 'error',
          }),
        ),
      )
      const outcomes = await Promise.all([
        owner.write('k', 'mine 2'),
        ...others.map((s) => codeOf(s.write('k', 'x'))),
      ])
      expect(outcomes.slice(1)).toEqual(others.map(() => 'WRITER_CONFLICT'))
      expect(await owner.read('k')).toBe('mine 2')
    })
  })
})
