import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MULTI_PROCESS_BACKENDS, type UrlTarget } from '@agent-state/backend-targets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inspectWorker, openSession, startWorker } from '../src/index.js'
import { runTs } from './child-process.js'
import { raceChildren } from './start-line.js'

describe.each(MULTI_PROCESS_BACKENDS)(
  'two processes race to resume one worker on $name',
  ({ target: make }) => {
    let dir: string
    let target: UrlTarget
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-race-'))
      target = make(dir)
    })
    afterAll(() => {
      rmSync(dir, { recursive: true, force: true })
    })

    it('exactly one process resumes; the other gets CONCURRENT_RESUME', async () => {
      const backend = await target.open('race')
      try {
        for (let round = 0; round < 3; round++) {
          const workerId = `race-${round}`
          const worker = await startWorker(backend, { workerId, holder: 'parent' })
          await worker.suspend({ reason: 'waiting for the race' })
          const outputs = await raceChildren(
            'test/fixtures/resume-race-child.ts',
            ['child-a', 'child-b'].map((holder) => [target.url, workerId, holder]),
            target.env,
          )
          const results = outputs.map(
            (out) => JSON.parse(out.trim()) as { outcome: string; token?: number },
          )
          const winners = results.filter((r) => r.outcome === 'won')
          expect(winners, JSON.stringify(results)).toHaveLength(1)
          const loser = results.find((r) => r.outcome !== 'won')
          // Deterministic whether the loser looked before or after the winner flipped the state.
          expect(loser?.outcome, JSON.stringify(results)).toBe('CONCURRENT_RESUME')
          const stored = await inspectWorker(backend, workerId)
          const resumes = stored.audit.filter((entry) => entry.event === 'worker_resumed')
          expect(resumes).toHaveLength(1)
          expect(resumes[0]?.token).toBe(winners[0]?.token)
          expect(stored.status).toBe('running')
          expect(stored.state).toEqual({ owner: stored.owner?.holder })
          console.info(`round ${round}: ${JSON.stringify(results)}`)
        }
      } finally {
        await backend.close()
      }
    }, 120_000)

    it('a session opened with error keeps it when another process reopens it', async () => {
      const backend = await target.open('race')
      try {
        const first = await openSession(backend, {
          sessionId: 'policy',
          writer: 'stage-a',
          conflictPolicy: 'error',
        })
        await first.write('plan.md', 'by stage-a')
        const out = await runTs(
          'test/fixtures/session-resume-child.ts',
          [target.url, 'policy', 'stage-b', 'plan.md'],
          60_000,
          target.env,
        )
        expect(JSON.parse(out.trim())).toEqual({ policy: 'error', outcome: 'WRITER_CONFLICT' })
        expect(await first.read('plan.md')).toBe('by stage-a')
      } finally {
        await backend.close()
      }
    }, 60_000)

    it('three processes writing one key under the error policy: exactly one succeeds', async () => {
      const writers = ['proc-a', 'proc-b', 'proc-c']
      const outputs = await raceChildren(
        'test/fixtures/conflict-race-child.ts',
        writers.map((writer) => [target.url, 'shared', writer, 'plan.md']),
        target.env,
      )
      const outcomes = outputs.map((out) => (JSON.parse(out.trim()) as { outcome: string }).outcome)
      expect(
        outcomes.filter((o) => o === 'resolved'),
        JSON.stringify(outcomes),
      ).toHaveLength(1)
      expect(outcomes.filter((o) => o === 'WRITER_CONFLICT')).toHaveLength(2)
      const backend = await target.open('race')
      try {
        const session = await openSession(backend, { sessionId: 'shared', writer: 'reader' })
        const winner = writers[outcomes.indexOf('resolved')]
        expect(await session.read('plan.md')).toBe(winner)
      } finally {
        await backend.close()
      }
    }, 60_000)
  },
)
