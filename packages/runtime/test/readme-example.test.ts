import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inspectWorker, suspensionSchema } from '../src/index.js'
import { runTs } from './child-process.js'

describe('the README example: suspend in one process, resume in another', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-readme-'))
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it.each(MULTI_PROCESS_BACKENDS)(
    'on $name',
    async ({ target: make }) => {
      const { url, env, open } = make(dir)
      const suspended = JSON.parse(
        (await runTs('examples/suspend-resume.ts', ['suspend', url], 60_000, env)).trim(),
      )
      const suspension = suspensionSchema.parse(suspended)
      expect(suspension.reason).toBe('waiting for a human to pick a fix')
      expect(JSON.stringify(suspension)).not.toContain('candidate fixes')
      const workerId = suspension.handle.workerId

      const resumed = JSON.parse(
        (await runTs('examples/suspend-resume.ts', ['resume', url, workerId], 60_000, env)).trim(),
      )
      expect(resumed.status).toBe('done')
      expect(resumed.state).toEqual({ step: 'research', findings: 3 })
      expect(resumed.reminder).toContain('waiting for a human to pick a fix')

      const backend = await open()
      try {
        const stored = await inspectWorker(backend, workerId)
        expect(stored).toMatchObject({
          status: 'done',
          result: { applied: 2 },
          iterationsCompleted: 2,
        })
        expect(stored.audit.map((entry) => entry.event)).toEqual([
          'worker_started',
          'resume_by_dispatched',
          'worker_suspended',
          'worker_resumed',
          // The resume by hand cancelled the timeout's wake and the topic waiter (wakes.md).
          'wakes_cancelled',
          'worker_completed',
        ])
      } finally {
        await backend.close()
      }
    },
    60_000,
  )
})
