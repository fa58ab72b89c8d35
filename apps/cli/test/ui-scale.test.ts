/**
 * `agent-state ui` at the scale: a namespace of 100,000 keys and a run with 10,000
 * effects (5,000 of them unknown) and 25 steps, seeded in bulk on the memory backend (in
 * process: the counts, not the backend, are under test). Each view's backend operations (the
 * key browser's page, the run's page, the overview) and the bytes it reads and sends are
 * counted through a wrapper of the backend and asserted bounded (never a time), and every
 * unknown effect and every step's outputs are found by following the run's pages. Five
 * committed mutants of the server's readers (a key page that lists the whole prefix; the run
 * view as it was, every unsettled effect read and sent; a run view that reads every step; an
 * overview that reads every unsettled effect; one that lists them all) fail the same checks.
 *
 * Knobs: AGENT_STATE_UI_SCALE_KEYS (default 100000), AGENT_STATE_UI_SCALE_EFFECTS (default
 * 10000).
 */
import type { Backend } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { countingBackend, type BackendTally as Tally } from './ui-backend-tally.js'
import { http, tokenCookie } from './ui-http.js'
import {
  SCALE_STEPS,
  scaleEffect,
  scaleKey,
  scaleStepOutputs,
  seedUiScale,
  unknownOf,
} from './ui-scale-seed.js'

const KEYS = Number(process.env.AGENT_STATE_UI_SCALE_KEYS ?? 100_000)
const EFFECTS = Number(process.env.AGENT_STATE_UI_SCALE_EFFECTS ?? 10_000)
/** Every even-numbered effect is unknown, every odd one confirmed. */
const UNKNOWN = unknownOf(EFFECTS)

const ref = (text: string) => Buffer.from(text, 'utf8').toString('base64url')

type ServerModule = typeof import('../src/ui/ui-server.js')

interface Served {
  get(path: string): Promise<{ body: unknown; bytes: number; tally: Tally }>
  close(): Promise<void>
}

async function serve(start: ServerModule['startUiServer'], backend: Backend): Promise<Served> {
  const count = countingBackend(backend)
  const server = await start({
    backend: count.backend,
    info: {
      url: 'memory:',
      namespace: 'default',
      name: backend.name,
      capabilities: backend.capabilities,
    },
    host: '127.0.0.1',
    port: 0,
  })
  const token = new URL(server.url).searchParams.get('token') ?? ''
  return {
    async get(path) {
      count.reset()
      const answer = await http(server.origin, path, {
        headers: { Cookie: tokenCookie(server.port, token) },
      })
      expect(answer.status, `${path}: ${answer.body.slice(0, 200)}`).toBe(200)
      return {
        body: JSON.parse(answer.body),
        bytes: Buffer.byteLength(answer.body),
        tally: count.tally(),
      }
    },
    close: () => server.close(),
  }
}

interface KeyPage {
  keys: { name: string }[]
  prefixes: unknown[]
  next: string | null
}

/**
 * The key browser's first three pages of `big/` and its root: one `list` call each, at most a
 * page (100) of entries listed, no value read, and an answer under 32 KiB.
 */
async function expectBoundedKeyPages(served: Served): Promise<void> {
  let cursor: string | null = null
  const seen: string[] = []
  for (let page = 1; page <= 3; page++) {
    const query = new URLSearchParams({ prefix: ref('big/') })
    if (cursor !== null) query.set('cursor', cursor)
    const { body, bytes, tally } = await served.get(`/api/keys?${query}`)
    const keys = body as KeyPage
    expect(tally.calls, `key page ${page}: backend calls`).toEqual({ list: 1 })
    expect(tally.listed, `key page ${page}: entries listed`).toBeLessThanOrEqual(100)
    expect(bytes, `key page ${page}: answer bytes`).toBeLessThan(32 * 1024)
    expect(keys.keys).toHaveLength(100)
    seen.push(...keys.keys.map((k) => k.name))
    cursor = keys.next
    expect(cursor, `key page ${page}: a next page`).not.toBeNull()
  }
  // The pages follow one another: keys 0 to 299, in order, none twice.
  expect(seen).toEqual(Array.from({ length: 300 }, (_, i) => scaleKey(i)))
  const root = await served.get(`/api/keys?prefix=`)
  expect(root.tally.calls, 'root page: backend calls').toEqual({ list: 1 })
  expect((root.body as KeyPage).prefixes).toHaveLength(2) // big/ and runs/
}

interface RunPage {
  settled: number
  counts: { effects: number; unsettled: number; exact: boolean }
  effectPage: { read: number; byState: Record<string, number>; next: string | null }
  effects: { effectId: string; state: string }[]
  stepPage: { count: number; newest: number; oldest: number; older: number | null }
  stepList: {
    seq: number
    outputs: { size: number; shownBytes: number; truncated: boolean; lines: string[] }
  }[]
}

/**
 * A page of run `big`'s steps, newest first from `newest`: each step's outputs are its first
 * 4 KiB (of 6,000-odd bytes) with their size, the stored JSON's start.
 */
function expectStepPage(run: RunPage, newest: number): void {
  const seqs = Array.from({ length: Math.min(10, newest) }, (_, i) => newest - i)
  expect(
    run.stepList.map((s) => s.seq),
    'steps shown',
  ).toEqual(seqs)
  expect(run.stepPage).toMatchObject({ count: SCALE_STEPS, newest, oldest: seqs.at(-1) })
  for (const step of run.stepList) {
    const stored = JSON.stringify(scaleStepOutputs(step.seq))
    expect(step.outputs, `step ${step.seq}: outputs`).toMatchObject({
      size: Buffer.byteLength(stored),
      shownBytes: 4096,
      truncated: true,
      lines: [stored.slice(0, 4096)],
    })
  }
}

/**
 * Run `big`'s view: one page of effect records read (at most 100 effects, one read each, and
 * the run head once for the page, as `readEffects` verifies) and one page of steps (at most 10
 * reads), at most 30 listings (the page, two
 * counts of at most 10 listings, the steps), an answer under 128 KiB; the counts are right;
 * every step's outputs are reached by following the pages of steps, and every unknown effect
 * by following the pages of `state=unknown`, each page as bounded.
 */
async function expectBoundedRunPages(served: Served): Promise<void> {
  const bounded = (what: string, tally: Tally, bytes: number) => {
    // inspectRun: the head and the newest step; readEffects: the head and 100 effects; a page
    // of 10 steps (9 on the newest page, whose newest step inspectRun has read).
    expect(tally.calls.get ?? 0, `${what}: get calls`).toBeLessThanOrEqual(2 + 101 + 10)
    expect(tally.calls.list ?? 0, `${what}: list calls`).toBeLessThanOrEqual(30)
    expect(tally.readBytes, `${what}: value bytes read`).toBeLessThan(512 * 1024)
    expect(bytes, `${what}: answer bytes`).toBeLessThan(128 * 1024)
  }
  const first = await served.get(`/api/run?ref=${ref('big')}`)
  bounded('run page', first.tally, first.bytes)
  const run = first.body as RunPage
  expect(run.counts).toEqual({
    effects: EFFECTS,
    unsettled: UNKNOWN,
    // Exact up to the limit: the memory backend gives no cursor after the last key.
    exact: EFFECTS <= 10_000,
    limit: 10_000,
  })
  expect(run.settled).toBe(EFFECTS - UNKNOWN)
  expect(run.effects.length).toBe(Math.min(100, UNKNOWN))
  expect(run.effectPage.byState).toEqual({ unknown: Math.min(100, UNKNOWN) })
  expectStepPage(run, SCALE_STEPS)
  // The older pages of steps, followed to the first step.
  let older = run.stepPage.older
  while (older !== null) {
    const { body, bytes, tally } = await served.get(`/api/run?ref=${ref('big')}&steps=${older}`)
    bounded(`steps page from ${older}`, tally, bytes)
    expectStepPage(body as RunPage, older)
    older = (body as RunPage).stepPage.older
  }
  // Every unknown effect is findable: the pages of `state=unknown`, followed to the end.
  const found = new Set<string>()
  let cursor: string | null = null
  let pages = 0
  do {
    const query = new URLSearchParams({ ref: ref('big'), state: 'unknown' })
    if (cursor !== null) query.set('effects', cursor)
    const { body, bytes, tally } = await served.get(`/api/run?${query}`)
    pages++
    bounded(`unknown page ${pages}`, tally, bytes)
    const page = body as RunPage
    for (const e of page.effects) {
      expect(e.state).toBe('unknown')
      found.add(e.effectId)
    }
    cursor = page.effectPage.next
  } while (cursor !== null)
  expect(found.size).toBe(UNKNOWN)
  expect([...found].sort()).toEqual(Array.from({ length: UNKNOWN }, (_, i) => scaleEffect(2 * i)))
}

interface Overview {
  attention: { kind: string; subject: string; detail: string }[]
}

/**
 * The overview: run `big`'s 5,000 unknown effects are its first 10 as items and one
 * `run-needs-attention` line with their count, in an answer under 16 KiB, from at most 22
 * reads whatever the run's size (the runs row of `big`, runtime `summarizeRun`: its head, its
 * newest step and its first 20 unsettled effects; the namespace has no session, worker or
 * daemon). The row counts the run's effects by state from key listings (keys only, 1,000 an
 * answer): its effects, its open markers and its unknown index, so those listings, and only
 * they, grow with the run: 6 + 10 + 5 + 5 listings at 10,000 effects (5,000 unknown).
 */
async function expectBoundedOverview(served: Served): Promise<void> {
  const { body, bytes, tally } = await served.get('/api/overview')
  const { attention } = body as Overview
  expect(bytes, 'overview: answer bytes').toBeLessThan(16 * 1024)
  expect(tally.calls.get ?? 0, 'overview: get calls').toBeLessThanOrEqual(22)
  expect(tally.readBytes, 'overview: value bytes read').toBeLessThan(64 * 1024)
  const listings = 6 + Math.ceil(EFFECTS / 1000) + 2 * Math.ceil(UNKNOWN / 1000)
  expect(tally.calls.list ?? 0, 'overview: list calls').toBeLessThanOrEqual(listings)
  expect(tally.listed, 'overview: entries listed').toBeLessThanOrEqual(
    EFFECTS + 2 * UNKNOWN + SCALE_STEPS,
  )
  const unknown = attention.filter((a) => a.kind === 'unknown-effect')
  expect(unknown.map((a) => a.subject)).toEqual(
    Array.from({ length: Math.min(10, UNKNOWN) }, (_, i) => `big / ${scaleEffect(2 * i)}`),
  )
  expect(attention.find((a) => a.kind === 'run-needs-attention')?.detail).toMatch(
    new RegExp(`^${UNKNOWN} unknown effect\\(s\\)`),
  )
}

let backend: Backend

beforeAll(async () => {
  backend = createMemoryBackend({ namespace: 'ui-scale' })
  await seedUiScale(backend, { keys: KEYS, effects: EFFECTS })
}, 120_000)

afterAll(async () => {
  await backend?.close()
})

describe(`agent-state ui at scale (${KEYS} keys, a run of ${EFFECTS} effects)`, () => {
  it('pages the keys and the run, each view with bounded backend calls and bytes', async () => {
    const { startUiServer } = await import('../src/ui/ui-server.js')
    const served = await serve(startUiServer, backend)
    try {
      await expectBoundedKeyPages(served)
      await expectBoundedRunPages(served)
      await expectBoundedOverview(served)
    } finally {
      await served.close()
    }
  })
})

describe('agent-state ui at scale: the checks catch unbounded readers (mutants)', () => {
  type Data = typeof import('../src/ui/ui-data.js')
  const MUTANTS: [string, (real: Data) => Partial<Data>, (s: Served) => Promise<void>, RegExp][] = [
    [
      'a key page that lists the whole prefix, then shows its first page',
      (real) => ({
        keyPage: async (b, prefix, cursor) => {
          let page = await b.list({ prefix, delimiter: '/' })
          while (page.cursor !== undefined)
            page = await b.list({ prefix, delimiter: '/', cursor: page.cursor })
          return real.keyPage(b, prefix, cursor)
        },
      }),
      expectBoundedKeyPages,
      /key page 1: backend calls/,
    ],
    [
      'the run view reading and sending every unsettled effect (inspectRun whole)',
      (real) => ({
        runDetail: async (b, runId, page) => {
          const { inspectRun } = await import('@agent-state/runtime')
          const whole = await inspectRun(b, runId)
          const shown = (await real.runDetail(b, runId, page)) as Record<string, unknown>
          return {
            ...shown,
            effects: whole.incomplete.map((e) => ({ effectId: e.effectId, state: e.state })),
          }
        },
      }),
      expectBoundedRunPages,
      /run page: get calls/,
    ],
    [
      'the run view reading every step, then showing its page of steps',
      (real) => ({
        runDetail: async (b, runId, page) => {
          const { inspectRun } = await import('@agent-state/runtime')
          const { readStep } = await import('@agent-state/runtime/internal')
          const view = await inspectRun(b, runId)
          for (let seq = 1; seq <= view.steps; seq++)
            await readStep(b, runId, seq, view.head.attempt.token)
          return real.runDetail(b, runId, page)
        },
      }),
      expectBoundedRunPages,
      /run page: get calls/,
    ],
    [
      'an overview reading every unsettled effect of a run (the runs rows as they were)',
      (real) => ({
        overview: async (b, info, now) => {
          const { inspectRun } = await import('@agent-state/runtime')
          await inspectRun(b, 'big')
          return real.overview(b, info, now)
        },
      }),
      expectBoundedOverview,
      /overview: get calls/,
    ],
    [
      'an overview listing every unknown effect',
      (real) => ({
        overview: async (b, info, now) => {
          const shown = (await real.overview(b, info, now)) as Overview
          const { inspectRun } = await import('@agent-state/runtime')
          const all = (await inspectRun(b, 'big')).incomplete.map((e) => ({
            kind: 'unknown-effect',
            view: 'runs',
            subject: `big / ${e.effectId}`,
            detail: `effect ${e.effectId} (${e.kind}) of run big: outcome unknown`,
          }))
          return { ...shown, attention: [...all, ...shown.attention.slice(10)] }
        },
      }),
      expectBoundedOverview,
      /overview: answer bytes/,
    ],
  ]
  for (const [name, mutate, check, failure] of MUTANTS) {
    it(`fails on ${name}`, async () => {
      vi.resetModules()
      vi.doMock('../src/ui/ui-data.js', async (original) => {
        const real = await original<Data>()
        return { ...real, ...mutate(real) }
      })
      try {
        const { startUiServer } = await import('../src/ui/ui-server.js')
        const served = await serve(startUiServer, backend)
        try {
          await expect(check(served)).rejects.toThrow(failure)
        } finally {
          await served.close()
        }
      } finally {
        vi.doUnmock('../src/ui/ui-data.js')
        vi.resetModules()
      }
    })
  }
})
