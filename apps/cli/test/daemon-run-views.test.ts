import { join } from 'node:path'
import { openBackend } from '@agent-state/core'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { importBackendPackage } from '../src/backend-importer.js'
import { removeTemps, runCli, runScript, tempDir } from './cli-process.js'

afterAll(removeTemps)

describe('daemons and runs views on state a crashed process left', () => {
  let url: string
  beforeAll(async () => {
    url = `file:${join(tempDir('agent-state-views-'), 'state')}`
    const seeded = await runScript('./seed-runs.ts', [url])
    expect(seeded.status, seeded.stderr).toBe(0)
  }, 120_000)

  it('daemons: pending, in flight, capacity; a damaged daemon is a row with its code and exit 1', async () => {
    const json = await runCli(['daemons', '--json', '--url', url])
    expect(json.status, json.stderr).toBe(1)
    expect(json.stderr).toContain('1 record(s) could not be read')
    const rows = JSON.parse(json.stdout).daemons
    expect(rows.map((r: { daemonId: string }) => r.daemonId)).toEqual(['broken', 'inbox'])
    expect(rows[0]).toMatchObject({ state: null, error: { code: 'QUEUE_CORRUPT' } })
    expect(rows[1]).toMatchObject({
      daemonId: 'inbox',
      state: 'active',
      pending: 2,
      inflight: { seq: 1, attempt: 1, holder: 'seed' },
      queued: 3,
      capacity: 8,
      iterations: 1,
      error: null,
    })
    const lines = await runCli(['daemons', '--jsonl', '--url', url])
    const streamed = lines.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(streamed.map((r: { daemonId: string }) => r.daemonId)).toEqual(['broken', 'inbox'])
    expect(streamed[1]).toMatchObject({ pending: 2, queued: 3, capacity: 8 })
    const table = await runCli(['daemons', '--url', url])
    const inbox = table.stdout.split('\n').find((l) => l.startsWith('inbox'))
    expect(inbox).toMatch(/^inbox\s+active\s+2\s+seq 1\s+1\s+seed\s+in \d+m \d+s\s+3\s+8\s+1$/)
  })

  it('runs: attempt, position, effects by state with unknown first; a damaged run is a row and exit 1', async () => {
    const json = await runCli(['runs', '--json', '--url', url])
    expect(json.status, json.stderr).toBe(1)
    const rows = JSON.parse(json.stdout).runs
    expect(rows.map((r: { runId: string }) => r.runId)).toEqual(['bad', 'ledger'])
    expect(rows[0]).toMatchObject({ status: null, error: { code: 'RUN_RECORD_CORRUPT' } })
    expect(rows[1]).toEqual({
      runId: 'ledger',
      status: 'open',
      attempt: { attemptId: 'ledger@1', holder: expect.any(String), count: 1 },
      position: { seq: 1, next: 'charge' },
      effects: {
        unknown: 1,
        submitted: 1,
        planned: 0,
        settled: 2,
        // Unknown first, although e-crash sorts before e-unknown.
        incomplete: [
          { effectId: 'e-unknown', kind: 'pay', state: 'unknown' },
          { effectId: 'e-crash', kind: 'pay', state: 'submitted' },
        ],
      },
      error: null,
    })
    const table = await runCli(['runs', '--url', url])
    expect(table.stdout.split('\n')[0]).toMatch(
      /^RUN\s+STATUS\s+ATTEMPT\s+ATTEMPTS\s+STEPS\s+NEXT\s+UNKNOWN\s+SUBMITTED\s+PLANNED\s+SETTLED$/,
    )
    const ledger = table.stdout.split('\n').find((l) => l.startsWith('ledger'))
    expect(ledger).toMatch(/^ledger\s+open\s+ledger@1\s+1\s+1\s+charge\s+1\s+1\s+0\s+2$/)
    expect(table.stdout).toMatch(/^bad\s+RUN_RECORD_CORRUPT/m)
  })
})

/**
 * The failed wake of seed-wakes.ts (daemon `hook`) as the view shows it: its
 * JSON row and its table line say why it failed (the code and the attempts).
 */
function expectFailedWakeRow(row: unknown): void {
  expect(row).toMatchObject({
    cause: 'webhook',
    state: 'failed',
    firing: { dispatcher: 'disp-2', latenessMs: 3000, attempts: 1, delivered: false },
    failure: {
      code: 'EVENT_NOT_FOUND',
      attempts: 1,
      message: 'the webhook body is gone',
      failedAt: Date.UTC(2020, 0, 1) + 5000,
      audited: false,
    },
  })
}

/** See {@link expectFailedWakeRow}: the table line. */
function expectFailedWakeLine(line: string | undefined): void {
  expect(line).toMatch(
    /daemon:hook\s+webhook\s+\S+\s+failed \(EVENT_NOT_FOUND, 1 attempt\)\s+3000 ms\s+disp-2$/,
  )
}

describe('wakes view', () => {
  let url: string
  beforeAll(async () => {
    url = `file:${join(tempDir('agent-state-wakes-'), 'state')}`
    const seeded = await runScript('./seed-wakes.ts', [url])
    expect(seeded.status, seeded.stderr).toBe(0)
  }, 120_000)

  it('lists wakes in due order with state, lateness, reason and why a wake failed; an unreadable record is a row and exit 1', async () => {
    const json = await runCli(['wakes', '--json', '--url', url])
    expect(json.status, json.stderr).toBe(1)
    expect(json.stderr).toContain('1 record(s) could not be read')
    const rows = JSON.parse(json.stdout).wakes
    expect(rows.map((r: { target: string | null }) => r.target)).toEqual([
      'daemon:inbox',
      'worker:woken',
      'daemon:hook',
      'worker:sleeper',
      'worker:sleeper',
      'worker:parked',
      'worker:gone',
      null,
    ])
    expect(rows[0]).toMatchObject({ cause: 'interval', state: 'pending', firing: null })
    expect(rows[1]).toMatchObject({
      cause: 'event',
      state: 'fired',
      dueAt: Date.UTC(2020, 0, 1) + 1000,
      firing: { dispatcher: 'disp-1', latenessMs: 2500, attempts: 1, delivered: true },
    })
    expect(rows[1].failure).toBeNull()
    expect(rows[5]).toMatchObject({
      cause: 'timeout',
      state: 'pending',
      dueAt: Date.UTC(2030, 0, 1),
      failure: null,
    })
    expect(rows[6]).toMatchObject({ state: 'cancelled', cancelReason: 'worker closed' })
    expect(rows[7]).toMatchObject({ state: null, error: { code: 'WAKE_CORRUPT' } })
    const table = await runCli(['wakes', '--url', url])
    const lines = table.stdout.split('\n')
    expect(lines[0]).toMatch(/^WAKE\s+TARGET\s+CAUSE\s+DUE\s+STATE\s+LATENESS\s+BY$/)
    expect(lines[1]).toMatch(
      /daemon:inbox\s+interval\s+2020-01-01T00:00:00\.000Z\s+pending\s+overdue \d+h \d+m\s+-$/,
    )
    expect(lines[2]).toMatch(/worker:woken\s+event\s+\S+\s+fired\s+2500 ms\s+disp-1$/)
    expectFailedWakeRow(rows[2])
    expectFailedWakeLine(lines[3])
    expect(lines[7]).toMatch(/worker:gone\s+schedule\s+\S+\s+cancelled\s+-\s+worker closed$/)
  })

  it("workers: a parked worker's next wake is its earliest pending one by due time, with the topic it waits on", async () => {
    const json = await runCli(['workers', '--json', '--url', url])
    expect(json.status, json.stderr).toBe(0)
    const [row, ...others] = JSON.parse(json.stdout).workers
    expect(others).toEqual([])
    // The schedule wake (03:00) was registered first; the timeout (00:59) is due first.
    expect(row).toMatchObject({
      workerId: 'sleeper',
      status: 'suspended',
      nextWake: {
        wake: { cause: 'timeout', dueAt: Date.UTC(2020, 0, 1, 0, 59) },
        topic: 'fix-chosen',
      },
    })
    const table = await runCli(['workers', '--url', url])
    const lines = table.stdout.split('\n')
    expect(lines[0]).toMatch(/\sEXPIRES\s+NEXT WAKE$/)
    expect(lines[1]).toMatch(
      /^sleeper\s+suspended\s.*\stimeout \d+h \d+m ago, or event fix-chosen$/,
    )
  })

  it('the failed-wake check catches a view that reads wake records without their failure (mutant)', async () => {
    vi.resetModules()
    vi.doMock('@agent-state/runtime/internal', async (original) => {
      const internal = await original<typeof import('@agent-state/runtime/internal')>()
      return {
        ...internal,
        decodeWake: (...args: Parameters<typeof internal.decodeWake>) => ({
          ...internal.decodeWake(...args),
          failure: null,
        }),
      }
    })
    try {
      const { wakesView } = await import('../src/commands/agent-views.js')
      const backend = await openBackend(url, { importer: importBackendPackage })
      try {
        const rows: unknown[] = []
        const lines: string[] = []
        for await (const row of wakesView.rows(backend)) {
          rows.push(JSON.parse(JSON.stringify(row)))
          lines.push(wakesView.cells(row, Date.now()).join('  '))
        }
        // The same rows as the CLI's: the failed wake is the third.
        expect(lines[2]).toMatch(/^\S+ {2}daemon:hook {2}webhook/)
        // Both checks see it: the row lacks its failure, the line says only `failed`.
        expect(rows[2]).toMatchObject({ state: 'failed', failure: null })
        expect(() => expectFailedWakeRow(rows[2])).toThrow(/to match object \{ cause: 'webhook'/)
        expect(lines[2]).toMatch(/ {2}failed {2}3000 ms {2}disp-2$/)
        expect(() => expectFailedWakeLine(lines[2])).toThrow(/to match \/daemon:hook/)
      } finally {
        await backend.close()
      }
    } finally {
      vi.doUnmock('@agent-state/runtime/internal')
      vi.resetModules()
    }
  })
})
