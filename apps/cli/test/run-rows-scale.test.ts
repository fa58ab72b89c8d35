/**
 * `agent-state runs` (and the UI's runs table and overview, which share its rows) at the
 * issue's scale: a run of 10,000 effects, 5,000 of them unknown, on the memory backend and
 * on SQLite. A run row reads the run's head, its newest step and the records of its first
 * `RUN_SUMMARY_EFFECTS` unsettled effects, whatever the run's size; every count comes from
 * key listings (the run's state index). Counted through a wrapper of the backend, never
 * timed. A committed mutant (the row as it was: every unsettled effect read) fails the check.
 *
 * The run is written once by the runtime on the memory backend, then copied key by key into
 * SQLite, a page of puts at a time (the same bytes; running 10,000 effects' writes one by one
 * through SQLite would cost the CI tens of seconds). Knob: AGENT_STATE_RUN_ROWS_EFFECTS
 * (default 10000).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { RUN_SUMMARY_EFFECTS } from '@agent-state/runtime'
import { createSqliteBackend } from '@agent-state/sqlite'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { RunRow } from '../src/commands/agent-views.js'
import { countingBackend } from './counting-backend.js'
import { scaleEffect, seedScaleRun, unknownOf } from './ui-scale-seed.js'

const EFFECTS = Number(process.env.AGENT_STATE_RUN_ROWS_EFFECTS ?? 10_000)
/** Every even-numbered effect is unknown, every odd one confirmed. */
const UNKNOWN = unknownOf(EFFECTS)

/** Run `big`: {@link EFFECTS} effects, the even ones left unknown, and one step. */
async function seed(backend: Backend): Promise<void> {
  const run = await seedScaleRun(backend, EFFECTS)
  await run.commitStep('charge', { ok: true }, { next: 'notify' })
  await run.close()
}

/**
 * Copies every key of `from` into `to`, bytes as they are, a page's puts side by side (so
 * SQLite's group commit takes many in one transaction).
 */
async function copyAll(from: Backend, to: Backend): Promise<void> {
  let cursor: string | undefined
  do {
    const page = await from.list({ limit: 1000, ...(cursor === undefined ? {} : { cursor }) })
    await Promise.all(
      page.entries.map(async (entry) => {
        const found = await from.get(entry.key)
        if (found !== null) await to.put(entry.key, found.value)
      }),
    )
    cursor = page.cursor
  } while (cursor !== undefined)
}

type Views = typeof import('../src/commands/agent-views.js')

/** Listings a row may page through: the effects, incomplete-markers and unknown markers (1,000 a page), and a few more. */
const LIST_BOUND = Math.ceil(EFFECTS / 1000) + 2 * Math.ceil(UNKNOWN / 1000) + 10

/**
 * The runs view's row of `big`: counts exact, its first unsettled effects unknown first, and
 * at most 2 + RUN_SUMMARY_EFFECTS gets (head, newest step, the first effects).
 */
async function expectBoundedRow(views: Views, backend: Backend): Promise<Record<string, number>> {
  const counted = countingBackend(backend)
  const rows: RunRow[] = []
  for await (const row of views.runsView.rows(counted.backend)) rows.push(row)
  const calls = { ...counted.calls() }
  expect(rows.map((r) => r.runId)).toEqual(['big'])
  const [row] = rows
  expect(row?.error).toBeNull()
  expect(row?.effects).toMatchObject({
    unknown: UNKNOWN,
    submitted: 0,
    planned: 0,
    settled: EFFECTS - UNKNOWN,
  })
  expect(row?.effects?.incomplete).toEqual(
    Array.from({ length: Math.min(RUN_SUMMARY_EFFECTS, UNKNOWN) }, (_, i) => ({
      effectId: scaleEffect(2 * i),
      kind: 'pay',
      state: 'unknown',
    })),
  )
  expect(row?.position).toEqual({ seq: 1, next: 'notify' })
  expect(calls.get ?? 0, 'run row: get calls').toBeLessThanOrEqual(2 + RUN_SUMMARY_EFFECTS)
  expect(calls.list ?? 0, 'run row: list calls').toBeLessThanOrEqual(LIST_BOUND)
  expect(Object.keys(calls).sort(), 'run row: only reads and listings').toEqual(
    Object.keys(calls)
      .filter((name) => name === 'get' || name === 'list')
      .sort(),
  )
  return calls
}

let dir: string
const backends: Record<string, Backend> = {}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agent-state-run-rows-'))
  const memory = createMemoryBackend({ namespace: 'run-rows' })
  await seed(memory)
  const sqlite = createSqliteBackend({ path: join(dir, 'state.db') })
  await copyAll(memory, sqlite)
  backends.memory = memory
  backends.sqlite = sqlite
}, 180_000)

afterAll(async () => {
  for (const backend of Object.values(backends)) await backend.close()
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
})

describe.each(['memory', 'sqlite'])(
  `a run row of a run with ${EFFECTS} effects (${UNKNOWN} unknown) on %s`,
  (name) => {
    it('reads the head, the newest step and the first effects; everything else is counted from listings', async () => {
      const views = await import('../src/commands/agent-views.js')
      const calls = await expectBoundedRow(views, backends[name] as Backend)
      console.info(`${name}: run row backend calls ${JSON.stringify(calls)}`)
    })
  },
)

describe('the run-row check catches a row that reads every unsettled effect (mutant)', () => {
  it('fails on the row as it was (inspectRun: every unsettled effect record read)', async () => {
    vi.resetModules()
    vi.doMock('@agent-state/runtime', async (original) => {
      const real = await original<typeof import('@agent-state/runtime')>()
      return {
        ...real,
        summarizeRun: async (backend: Backend, runId: string) => {
          await real.inspectRun(backend, runId)
          return real.summarizeRun(backend, runId)
        },
      }
    })
    try {
      const views = (await import('../src/commands/agent-views.js')) as Views
      const counted = countingBackend(backends.memory as Backend)
      for await (const _ of views.runsView.rows(counted.backend)) {
        // drain
      }
      console.info(
        `mutant (every record read): run row backend calls ${JSON.stringify(counted.calls())}`,
      )
      await expect(expectBoundedRow(views, backends.memory as Backend)).rejects.toThrow(
        /run row: get calls/,
      )
    } finally {
      vi.doUnmock('@agent-state/runtime')
      vi.resetModules()
    }
  })
})

describe('a run row whose in-flight effects are more than the bound read', () => {
  it('prints the submitted and planned counts as at least (≥n), the others as they are', async () => {
    const { runsView } = await import('../src/commands/agent-views.js')
    const row: RunRow = {
      runId: 'busy',
      status: 'open',
      attempt: { attemptId: 'busy@3', holder: 'h', count: 3 },
      position: { seq: 1, next: null },
      effects: {
        unknown: 4,
        submitted: 60,
        planned: 40,
        settled: 7,
        inFlight: 150,
        splitOf: 100,
        incomplete: [],
      },
      error: null,
    }
    expect(runsView.cells(row, 0).slice(-4)).toEqual(['4', '\u226560', '\u226540', '7'])
    const { inFlight: _, splitOf: __, ...exact } = row.effects ?? { incomplete: [] }
    expect(runsView.cells({ ...row, effects: exact as RunRow['effects'] }, 0).slice(-4)).toEqual([
      '4',
      '60',
      '40',
      '7',
    ])
  })
})
