import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runTs } from './child-process.js'

describe('the README daemon example: stop mid-turn in one process, resume in another', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-daemon-readme-'))
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it.each(MULTI_PROCESS_BACKENDS)(
    'on $name',
    async ({ target: make }) => {
      const { url, env } = make(dir)
      const spawned = JSON.parse(
        (await runTs('examples/daemon.ts', ['spawn', url, 'reviewer'], 60_000, env)).trim(),
      )
      expect(spawned.interrupted).toEqual({ kind: 'file_changed', path: 'src/lib.rs' })
      expect(spawned.snapshot).toMatchObject({
        daemonId: 'reviewer',
        daemonState: 'stopped',
        inflightEvent: null,
        pendingEventCount: 3,
        queuedEventCount: 3,
        eventQueueCapacity: 256,
        wakeIntervalMs: 30_000,
        watchPaths: ['src/'],
        totalIterations: 0,
        pendingEvents: [
          { kind: 'file_changed', path: 'src/lib.rs' },
          { kind: 'file_changed', path: 'src/main.rs' },
          { kind: 'file_changed', path: 'src/util.rs' },
        ],
      })
      // The seed-000 daemon fields persisted in the worker snapshot at stop.
      expect(spawned.snapshot.worker.status).toBe('suspended')
      expect(spawned.snapshot.worker.state.daemon).toEqual({
        pendingEventCount: 3,
        queuedEventCount: 3,
        inflightEvent: null,
        wakeIntervalMs: 30_000,
        watchPaths: ['src/'],
        eventQueueCapacity: 256,
        decidedSeq: null,
      })

      const resumed = JSON.parse(
        (await runTs('examples/daemon.ts', ['resume', url, 'reviewer'], 60_000, env)).trim(),
      )
      // The interrupted event first, on its second attempt, then the rest in order.
      expect(resumed.handled).toEqual([
        { seq: 0, attempt: 2, event: { kind: 'file_changed', path: 'src/lib.rs' } },
        { seq: 1, attempt: 1, event: { kind: 'file_changed', path: 'src/main.rs' } },
        { seq: 2, attempt: 1, event: { kind: 'file_changed', path: 'src/util.rs' } },
      ])
      expect(resumed.snapshot).toMatchObject({
        daemonState: 'idle',
        pendingEventCount: 0,
        queuedEventCount: 0,
        inflightEvent: null,
        totalIterations: 3,
        pendingEvents: [],
      })
      expect(resumed.snapshot.worker.state.app).toEqual({
        reviewed: ['src/lib.rs', 'src/main.rs', 'src/util.rs'],
      })
      expect(resumed.snapshot.worker.iterationsCompleted).toBe(3)
      // Each ack stored its event's sequence number with the state, as one decision.
      expect(resumed.snapshot.worker.state.daemon).toMatchObject({
        decidedSeq: 2,
        queuedEventCount: 0,
      })
    },
    120_000,
  )
})
