/**
 * `agent-state ui` at the scale: a namespace of 100,000 keys and a run with 10,000
 * effects (5,000 of them unknown) and 25 steps, seeded in bulk on the memory backend (in
 * process: the counts, not the backend, are under test). Each view's backend operations (the
 * key browser's page, the run's page, the overview) and the bytes it reads and sends are
 * counted through a wrapper of the backend and asserted bounded (never a time), and every
 * unknown effect and every step's outputs are found by following the run's pages. The
 * overview and the run's page must ask the same calls of the backend as on a namespace whose
 * run has 250 effects (their cost does not grow with the run), and a run of 1,500 steps has
 * its newest step found by one listing and a search by key. Committed mutants of the server's
 * readers (a key page that lists the whole prefix; the run view as it was, every unsettled
 * effect read and sent; a run view that reads every step; a run view that counts by listing
 * every effect key; an overview that reads every unsettled effect; one whose runs rows list
 * every key of the run, as the `runs` command's exact rows do; one that lists every unknown
 * effect; a run head that lists every step key; one that stops at the listed steps) fail
 * the same checks.
 *
 * Knobs: AGENT_STATE_UI_SCALE_KEYS (default 100000), AGENT_STATE_UI_SCALE_EFFECTS (default
 * 10000), AGENT_STATE_UI_SCALE_STEPS (default 1500).
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
  seedStepsRun,
  seedUiScale,
  unknownOf,
} from './ui-scale-seed.js'

const KEYS = Number(process.env.AGENT_STATE_UI_SCALE_KEYS ?? 100_000)
const EFFECTS = Number(process.env.AGENT_STATE_UI_SCALE_EFFECTS ?? 10_000)
/** Every even-numbered effect is unknown, every odd one confirmed. */
const UNKNOWN = unknownOf(EFFECTS)
/**
 * The effects of run `big` in the small namespace, which the large one's views must match:
 * more unsettled ones (125) than a page of the run's view (100), fewer than the listing limit.
 */
const SMALL_EFFECTS = 250
/** Keys the views list at most under each of a run's prefixes (`RUN_GLANCE_LISTED`). */
const COUNTED = 1000
/** Steps of run `long`: more than the one listing of step keys a run's view makes (1,000). */
const LONG_STEPS = Number(process.env.AGENT_STATE_UI_SCALE_STEPS ?? 1500)

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
  settled: number | null
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
 * the run head once for the page, as `readEffects` verifies), one page of steps (at most 10
 * reads), and four listings whatever the run's size (its steps, at most 1,000 of its effects
 * and of its open markers to count them, a page of open markers), no lookup by key (the run
 * has fewer than 1,000 steps), an answer under 128 KiB; the counts are right, or lower
 * bounds past 1,000; every step's outputs are reached by following the pages of steps, and
 * every unknown effect by following the pages of `state=unknown`, each page as bounded.
 */
async function expectBoundedRunPages(served: Served): Promise<void> {
  const bounded = (what: string, tally: Tally, bytes: number) => {
    // inspectRunHead: the head and the newest step; readEffects: the head and 100 effects; a
    // page of 10 steps (9 on the newest page, whose newest step inspectRunHead has read).
    expect(tally.calls.get ?? 0, `${what}: get calls`).toBeLessThanOrEqual(2 + 101 + 10)
    expect(tally.calls.list ?? 0, `${what}: list calls`).toBeLessThanOrEqual(4)
    expect(tally.calls.head ?? 0, `${what}: head calls`).toBe(0)
    expect(tally.listed, `${what}: entries listed`).toBeLessThanOrEqual(
      SCALE_STEPS + 2 * COUNTED + 100,
    )
    expect(tally.readBytes, `${what}: value bytes read`).toBeLessThan(512 * 1024)
    expect(bytes, `${what}: answer bytes`).toBeLessThan(128 * 1024)
  }
  const first = await served.get(`/api/run?ref=${ref('big')}`)
  bounded('run page', first.tally, first.bytes)
  const run = first.body as RunPage
  expect(run.counts).toEqual({
    effects: Math.min(EFFECTS, COUNTED),
    unsettled: Math.min(UNKNOWN, COUNTED),
    // Exact up to the limit: the memory backend gives no cursor after the last key.
    exact: EFFECTS <= COUNTED,
    limit: COUNTED,
  })
  // Not counted past the limit of unsettled effects (the page says so), never a guess.
  expect(run.settled).toBe(UNKNOWN > COUNTED ? null : EFFECTS - UNKNOWN)
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
 * The overview: run `big`'s unknown effects are its first 10 as items and one
 * `run-needs-attention` line with their count (`at least 1000` past the listing limit), in
 * an answer under 16 KiB, from 13 reads whatever the run's size (its glance row: its head
 * and newest step, `readEffects`' head and its first 10 unknown effects; the namespace has
 * no session, worker or daemon) and at most 9 listings (the four kinds of record; the run's
 * steps, and at most 1,000 of its effects, open markers and unknown markers).
 */
async function expectBoundedOverview(served: Served): Promise<void> {
  const { body, bytes, tally } = await served.get('/api/overview')
  const { attention } = body as Overview
  expect(bytes, 'overview: answer bytes').toBeLessThan(16 * 1024)
  expect(tally.calls.get ?? 0, 'overview: get calls').toBeLessThanOrEqual(13)
  expect(tally.calls.head ?? 0, 'overview: head calls').toBe(0)
  expect(tally.readBytes, 'overview: value bytes read').toBeLessThan(64 * 1024)
  expect(tally.calls.list ?? 0, 'overview: list calls').toBeLessThanOrEqual(9)
  expect(tally.listed, 'overview: entries listed').toBeLessThanOrEqual(
    3 * COUNTED + SCALE_STEPS + 1,
  )
  const unknown = attention.filter((a) => a.kind === 'unknown-effect')
  expect(unknown.map((a) => a.subject)).toEqual(
    Array.from({ length: Math.min(10, UNKNOWN) }, (_, i) => `big / ${scaleEffect(2 * i)}`),
  )
  expect(attention.find((a) => a.kind === 'run-needs-attention')?.detail).toMatch(
    UNKNOWN > COUNTED
      ? new RegExp(`^at least ${COUNTED} unknown effect\\(s\\)`)
      : new RegExp(`^${UNKNOWN} unknown effect\\(s\\)`),
  )
}

/**
 * What the overview and the run's first page ask of the backend does not depend on the run's
 * size: on a namespace whose run `big` has {@link SMALL_EFFECTS} effects and on the one of
 * {@link EFFECTS}, the same calls of each method (the entries listed are bounded above).
 */
async function expectSizeFree(small: Served, large: Served): Promise<void> {
  for (const path of ['/api/overview', `/api/run?ref=${ref('big')}`]) {
    const few = await small.get(path)
    const many = await large.get(path)
    expect(
      many.tally.calls,
      `${path} at ${SMALL_EFFECTS} and ${EFFECTS} effects: backend calls`,
    ).toEqual(few.tally.calls)
  }
}

/**
 * Run `long`'s page (steps past the one listing of 1,000 step keys): its position and its
 * newest page of steps are right, from at most 4 listings (none of them a second page of
 * steps), a search of at most 2·log2(n) `head` lookups and 12 reads (the head twice, the
 * newest step, 9 more steps); the page of steps that crosses the listed ones is right too.
 */
async function expectLongRunFound(served: Served): Promise<void> {
  const { body, tally } = await served.get(`/api/run?ref=${ref('long')}`)
  const run = body as RunPage & { steps: number; next: string | null }
  expect(run.steps, 'long run: steps').toBe(LONG_STEPS)
  expect(run.next).toBeNull()
  expect(
    run.stepList.map((s) => s.seq),
    'long run: steps shown',
  ).toEqual(Array.from({ length: 10 }, (_, i) => LONG_STEPS - i))
  expect(tally.calls.list ?? 0, 'long run page: list calls').toBeLessThanOrEqual(4)
  expect(tally.listed, 'long run page: entries listed').toBeLessThanOrEqual(COUNTED)
  expect(tally.calls.head ?? 0, 'long run page: head calls').toBeLessThanOrEqual(
    2 * Math.ceil(Math.log2(LONG_STEPS)),
  )
  expect(tally.calls.get ?? 0, 'long run page: get calls').toBeLessThanOrEqual(12)
  const across = await served.get(`/api/run?ref=${ref('long')}&steps=${COUNTED + 5}`)
  expect((across.body as RunPage).stepList.map((s) => s.seq)).toEqual(
    Array.from({ length: 10 }, (_, i) => COUNTED + 5 - i),
  )
}

let backend: Backend
let small: Backend
let long: Backend

beforeAll(async () => {
  backend = createMemoryBackend({ namespace: 'ui-scale' })
  small = createMemoryBackend({ namespace: 'ui-scale-small' })
  long = createMemoryBackend({ namespace: 'ui-scale-long' })
  await seedUiScale(backend, { keys: KEYS, effects: EFFECTS })
  await seedUiScale(small, { keys: 0, effects: SMALL_EFFECTS })
  await seedStepsRun(long, 'long', LONG_STEPS)
}, 120_000)

afterAll(async () => {
  await backend?.close()
  await small?.close()
  await long?.close()
})

/** The server over the large namespace and over the small one. */
interface Both {
  large: Served
  small: Served
}

/** Serves both namespaces with `start`, runs `check`, closes both. */
async function withBoth(
  start: ServerModule['startUiServer'],
  check: (both: Both) => Promise<void>,
): Promise<void> {
  const large = await serve(start, backend)
  try {
    const few = await serve(start, small)
    try {
      await check({ large, small: few })
    } finally {
      await few.close()
    }
  } finally {
    await large.close()
  }
}

const onLarge =
  (check: (served: Served) => Promise<void>) =>
  ({ large }: Both) =>
    check(large)

describe(`agent-state ui at scale (${KEYS} keys, a run of ${EFFECTS} effects)`, () => {
  it('pages the keys and the run, each view with bounded backend calls and bytes', async () => {
    const { startUiServer } = await import('../src/ui/ui-server.js')
    await withBoth(startUiServer, async (both) => {
      await expectBoundedKeyPages(both.large)
      await expectBoundedRunPages(both.large)
      await expectBoundedOverview(both.large)
      await expectSizeFree(both.small, both.large)
    })
  })
})

describe(`agent-state ui on a run of ${LONG_STEPS} steps`, () => {
  it('finds its newest step by one listing and a search by key, not by listing every step', async () => {
    const { startUiServer } = await import('../src/ui/ui-server.js')
    const served = await serve(startUiServer, long)
    try {
      await expectLongRunFound(served)
    } finally {
      await served.close()
    }
  })

  type Runtime = typeof import('@agent-state/runtime')
  const MUTANTS: [string, (real: Runtime) => Runtime['inspectRunHead'], RegExp][] = [
    [
      'a run head found as inspectRun finds it (every step key listed)',
      (real) => async (b, runId) => {
        const { incomplete: _, ...view } = await real.inspectRun(b, runId)
        return view
      },
      /long run page: list calls/,
    ],
    [
      'a run head that takes the listed page of steps for all of them (no search)',
      (real) => async (b, runId) => {
        const { readStep, runStepsPrefix } = await import('@agent-state/runtime/internal')
        const view = await real.inspectRunHead(b, runId)
        const page = await b.list({ prefix: runStepsPrefix(runId), limit: COUNTED })
        const count = page.entries.length
        const lastStep = await readStep(b, runId, count, view.head.attempt.token)
        return { ...view, steps: count, lastStep }
      },
      /long run: steps/,
    ],
  ]
  for (const [name, mutate, failure] of MUTANTS) {
    it(`the check fails on ${name} (mutant)`, async () => {
      vi.resetModules()
      vi.doMock('@agent-state/runtime', async (original) => {
        const real = await original<Runtime>()
        return { ...real, inspectRunHead: mutate(real) }
      })
      try {
        const { startUiServer } = await import('../src/ui/ui-server.js')
        const served = await serve(startUiServer, long)
        try {
          await expect(expectLongRunFound(served)).rejects.toThrow(failure)
        } finally {
          await served.close()
        }
      } finally {
        vi.doUnmock('@agent-state/runtime')
        vi.resetModules()
      }
    })
  }
})

describe('agent-state ui at scale: the checks catch unbounded readers (mutants)', () => {
  type Data = typeof import('../src/ui/ui-data.js')
  type Views = typeof import('../src/commands/agent-views.js')
  const effectsPrefix = (runId: string) => `runs/${runId}/effects/`
  const MUTANTS: [
    string,
    '../src/ui/ui-data.js' | '../src/commands/agent-views.js',
    (real: Data & Views) => Partial<Data & Views>,
    (both: Both) => Promise<void>,
    RegExp,
  ][] = [
    [
      'a key page that lists the whole prefix, then shows its first page',
      '../src/ui/ui-data.js',
      (real) => ({
        keyPage: async (b, prefix, cursor) => {
          let page = await b.list({ prefix, delimiter: '/' })
          while (page.cursor !== undefined)
            page = await b.list({ prefix, delimiter: '/', cursor: page.cursor })
          return real.keyPage(b, prefix, cursor)
        },
      }),
      onLarge(expectBoundedKeyPages),
      /key page 1: backend calls/,
    ],
    [
      'the run view reading and sending every unsettled effect (inspectRun whole)',
      '../src/ui/ui-data.js',
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
      onLarge(expectBoundedRunPages),
      /run page: get calls/,
    ],
    [
      'the run view reading every step, then showing its page of steps',
      '../src/ui/ui-data.js',
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
      onLarge(expectBoundedRunPages),
      /run page: get calls/,
    ],
    [
      'a run view counting its effects by listing every effect key (the counts as they were)',
      '../src/ui/ui-data.js',
      (real) => ({
        runDetail: async (b, runId, page) => {
          const { countKeys } = await import('../src/commands/agent-views.js')
          await countKeys(b, effectsPrefix(runId))
          return real.runDetail(b, runId, page)
        },
      }),
      ({ large, small }) => expectSizeFree(small, large),
      /api\/run\?ref=Ymln at \d+ and \d+ effects: backend calls/,
    ],
    [
      'an overview reading every unsettled effect of a run (the runs rows as they were)',
      '../src/ui/ui-data.js',
      (real) => ({
        overview: async (b, info, now) => {
          const { inspectRun } = await import('@agent-state/runtime')
          await inspectRun(b, 'big')
          return real.overview(b, info, now)
        },
      }),
      onLarge(expectBoundedOverview),
      /overview: get calls/,
    ],
    [
      "an overview whose runs rows list every effect, open marker and unknown marker (the CLI's exact rows)",
      '../src/commands/agent-views.js',
      (real) => ({ runsGlanceView: real.runsView }),
      ({ large, small }) => expectSizeFree(small, large),
      /api\/overview at \d+ and \d+ effects: backend calls/,
    ],
    [
      'an overview listing every unknown effect',
      '../src/ui/ui-data.js',
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
      onLarge(expectBoundedOverview),
      /overview: answer bytes/,
    ],
  ]
  for (const [name, module, mutate, check, failure] of MUTANTS) {
    it(`fails on ${name}`, async () => {
      vi.resetModules()
      vi.doMock(module, async (original) => {
        const real = await original<Data & Views>()
        return { ...real, ...mutate(real) }
      })
      try {
        const { startUiServer } = await import('../src/ui/ui-server.js')
        await withBoth(startUiServer, async (both) => {
          await expect(check(both)).rejects.toThrow(failure)
        })
      } finally {
        vi.doUnmock(module)
        vi.resetModules()
      }
    })
  }
})
