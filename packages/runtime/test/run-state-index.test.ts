/**
 * The run's index of its unknown effects (effect-state-index.ts,
 * docs/runtime/runs-and-effects.md, Counting effects by state):
 *
 * - crash windows: a process SIGKILLed inside a move of an effect's `unknown` marker (every
 *   one of the six windows of unknown-index-windows.ts, in a child process, on SQLite and
 *   the filesystem) leaves the effect *ambiguous* in the listing, never under a wrong marker
 *   or wrongly without one, so `summarizeRun`'s counts are right straight after the crash;
 *   the next owner's open repairs the index, after which a summary reads no effect beyond
 *   its first ones;
 * - the split of the effects in flight: read up to a bound, beyond it counted over the
 *   first ones read and flagged (`splitOf`), the in-flight total exact;
 * - runs written by the previous runtime (ledger schema version 1, no index, a head without
 *   `unknownIndex`) are counted right (every incomplete effect read) and indexed by their
 *   next open; this runtime writes version 2, which a version-1 runtime refuses
 *   (run-integrity.test.ts: a version newer than the runtime reads is
 *   `RUN_RECORD_INCOMPATIBLE`);
 * - `readEffects` reads the head once for a page.
 *
 * Committed mutants: no repair on open, the marker moved after the record without the
 * `moving` bracket, and a page reader that reads the head per effect, each fail the checks.
 * (That the normal path moves no marker is run-effect-calls.test.ts.)
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshName, MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import { type Backend, createManualClock } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import * as real from '../src/index.js'
import { listStates } from '../src/run/effect-state-index.js'
import { encodeRunRecord } from '../src/run/run-codec.js'
import { effectRecordSchema } from '../src/run/run-records.js'
import { checksumOf } from '../src/shared/canonical-json.js'
import { countingBackend } from './counting-backend.js'
import { runFixtureChild } from './fixture-child.js'
import {
  driveToWindow,
  dyingAt,
  handlers,
  WINDOWS,
  type Window,
} from './fixtures/unknown-index-windows.js'
import { mutated, type Runtime, unmockAll } from './mutants.js'

afterEach(unmockAll)

/** The dead owner's lease; the next owner waits it out. */
const LEASE_TTL_MS = 2000

/** `get` calls of `summarizeRun(...args)` through a counting wrapper, and its summary. */
async function countedSummary(rt: Runtime, backend: Backend, runId: string, limit?: number) {
  const counted = countingBackend(backend)
  const summary = await rt.summarizeRun(counted.backend, runId, limit)
  return { summary, gets: counted.calls().get ?? 0 }
}

/** The unsettled counts the effect's record says, one effect `e1`. */
async function truth(rt: Runtime, backend: Backend, runId: string) {
  const record = await rt.readEffect(backend, runId, 'e1')
  const counts = { unknown: 0, submitted: 0, planned: 0 }
  if (record !== null && record.state in counts) counts[record.state as keyof typeof counts] = 1
  return counts
}

/** Opens the run as its next owner (waiting out the dead one's lease); a run left needing attention is opened too. */
async function reopen(rt: Runtime, backend: Backend, runId: string, wait: () => Promise<void>) {
  for (let tries = 0; ; tries++) {
    try {
      const run = await rt.openRun(backend, runId, { handlers, leaseTtlMs: 30_000 })
      await run.close()
      return
    } catch (error) {
      // By its code field: a mutated runtime's errors come from its own copy of the core
      // module, which `isAgentStateError` of this one does not recognize.
      const code = (error as { code?: unknown }).code
      if (code === 'RUN_NEEDS_ATTENTION') return
      if (code !== 'RUN_OWNED' || tries > 50) throw error
      await wait()
    }
  }
}

/**
 * What a crash in `window` must leave, and what the next open must make of it: the effect
 * ambiguous in the listing (the window is visible), counts that match its record, then,
 * after the next owner opened the run, no ambiguity, an index that matches the record, and
 * a summary reading the head and the one effect at most.
 */
async function expectVisibleThenRepaired(
  rt: Runtime,
  backend: Backend,
  runId: string,
  window: Window,
  wait: () => Promise<void>,
): Promise<void> {
  const before = await listStates(backend, runId)
  expect(
    before.ambiguous.map((a) => a.effectId),
    `${window}: the crash window is visible`,
  ).toEqual(['e1'])
  expect(
    (await rt.summarizeRun(backend, runId)).unsettled,
    `${window}: counts after the crash`,
  ).toEqual(await truth(rt, backend, runId))
  await reopen(rt, backend, runId, wait)
  const after = await listStates(backend, runId)
  expect(after.ambiguous, `${window}: repaired by the next open`).toEqual([])
  const counts = await truth(rt, backend, runId)
  expect(
    { unknown: after.unknown.length, inFlight: after.inFlight.length },
    `${window}: the index after the repair`,
  ).toEqual({ unknown: counts.unknown, inFlight: counts.submitted + counts.planned })
  const { summary, gets } = await countedSummary(rt, backend, runId)
  expect(summary.unsettled).toEqual(counts)
  expect(gets, `${window}: summary reads after the repair`).toBeLessThanOrEqual(2 + 1)
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

describe.each(MULTI_PROCESS_BACKENDS.filter((b) => b.name === 'sqlite' || b.name === 'fs'))(
  'kill -9 inside a move of the unknown marker, on $name',
  ({ target: make }) => {
    let dir: string
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), 'agent-state-run-index-'))
    })
    afterAll(() => rmSync(dir, { recursive: true, force: true }))

    it('every window is visible in the listing, counted right, and repaired by the next open', async () => {
      const target = make(dir)
      const namespace = freshName('index')
      const backend = await target.open(namespace)
      try {
        await Promise.all(
          WINDOWS.map(async (window) => {
            const runId = `w-${window}`
            const child = await runFixtureChild(
              'test/fixtures/run-index-crash-child.ts',
              [target.url, namespace, runId, window, String(LEASE_TTL_MS)],
              target.env,
            )
            const context = `${window}: ${JSON.stringify(child.lines)} ${child.stderr.slice(-2000)}`
            expect(child.signal, context).toBe('SIGKILL')
            expect(child.lines, context).toEqual([{ crashed: window }])
            await expectVisibleThenRepaired(real, backend, runId, window, () => sleep(250))
          }),
        )
      } finally {
        await backend.close()
      }
    }, 180_000)
  },
)

/**
 * The same windows in process, for the mutants: the owner "dies" at the window (every
 * later backend call refused, so nothing more is stored, as after a SIGKILL), on a memory
 * backend whose lease clock the next owner moves past the dead one's lease.
 */
async function crashInProcess(rt: Runtime, window: Window): Promise<void> {
  const clock = createManualClock()
  const backend = createMemoryBackend({ namespace: freshName('index'), clock: clock.now })
  const runId = `w-${window}`
  let dead = false
  let armed = window.startsWith('enter-')
  const dying = dyingAt(
    backend,
    runId,
    window,
    () => {
      dead = true
      throw new Error('dead')
    },
    () => armed,
  )
  const refusing = new Proxy(dying, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        if (dead) throw new Error('dead')
        return value.apply(target, args)
      }
    },
  })
  await driveToWindow(rt, refusing, runId, window, {
    leaseTtlMs: LEASE_TTL_MS,
    clock: clock.now,
    arm: () => {
      armed = true
    },
  })
  expect(dead, `${window}: the owner died at the window`).toBe(true)
  await expectVisibleThenRepaired(rt, backend, runId, window, async () => {
    clock.advance(LEASE_TTL_MS + 1)
  })
}

describe('kill inside a move of the unknown marker, in process on memory', () => {
  it.each(WINDOWS)('%s: visible, counted right, repaired by the next open', async (window) => {
    await crashInProcess(real, window)
  })
})

describe('the effects in flight', () => {
  it('are split by reading them up to the bound; beyond it over the first ones, flagged, the total exact', async () => {
    const backend = createMemoryBackend({ namespace: freshName('flight') })
    const run = await real.openRun(backend, 'busy', {
      handlers: { pay: { ...handlers.pay, dispatch: async () => ({ ok: true }) } },
    })
    for (let i = 0; i < 5; i++) await run.effect('pay', `e${i}`, { i })
    await run.close()
    // As a dead owner leaves them (a Run handle performs one effect at a time): e0, e2, e4
    // submitted, e1, e3 planned, each with its incomplete-marker.
    for (let i = 0; i < 5; i++) {
      const record = await real.readEffect(backend, 'busy', `e${i}`)
      if (record === null) throw new Error(`e${i} has no record`)
      const state = i % 2 === 0 ? ('submitted' as const) : ('planned' as const)
      const inFlight = { ...record, state, result: null }
      await backend.put(
        `runs/busy/effects/e${i}.json`,
        encodeRunRecord('effect', effectRecordSchema, inFlight),
      )
      await backend.put(`runs/busy/open/e${i}`, new Uint8Array(0))
    }
    const all = await real.summarizeRun(backend, 'busy', 20, 5)
    expect([all.unsettled, all.inFlight, all.splitOf]).toEqual([
      { unknown: 0, submitted: 3, planned: 2 },
      5,
      null,
    ])
    const { summary: some, gets } = await (async () => {
      const counted = countingBackend(backend)
      const summary = await real.summarizeRun(counted.backend, 'busy', 2, 3)
      return { summary, gets: counted.calls().get }
    })()
    expect([some.unsettled, some.inFlight, some.splitOf]).toEqual([
      { unknown: 0, submitted: 2, planned: 1 },
      5,
      3,
    ])
    expect(some.first.map((r) => r.effectId)).toEqual(['e0', 'e2'])
    expect(gets, 'the head and the three in-flight records read').toBe(1 + 3)
  })
})

describe('a run written by the previous runtime (schema version 1, no index)', () => {
  it('is counted right by reading its incomplete effects, and indexed by its next open (version 2)', async () => {
    const backend = createMemoryBackend({ namespace: freshName('v1') })
    const run = await real.openRun(backend, 'old', {
      handlers: {
        pay: {
          ...handlers.pay,
          dispatch: async (call) => {
            if ((call.request as { i: number }).i % 2 === 0) throw new Error('connection reset')
            return { ok: true }
          },
        },
      },
    })
    for (let i = 0; i < 10; i++) await run.effect('pay', `e${i}`, { i }).catch(() => undefined)
    await run.close()
    // What the previous runtime left: the same records at version 1, a head without
    // `unknownIndex`, and no index markers.
    const decoder = new TextDecoder()
    const listed = await backend.list({ prefix: 'runs/old/' })
    for (const { key } of listed.entries) {
      if (key.startsWith('runs/old/states/')) {
        await backend.delete(key)
        continue
      }
      const found = await backend.get(key)
      if (found === null || found.value.length === 0) continue
      const envelope = JSON.parse(decoder.decode(found.value))
      expect(envelope.schemaVersion, key).toBe(2)
      const { unknownIndex, ...body } = envelope.body
      expect(unknownIndex, key).toBe(key === 'runs/old/run.json' ? true : undefined)
      const old = { ...envelope, body, checksum: checksumOf(body), schemaVersion: 1 }
      await backend.put(key, new TextEncoder().encode(JSON.stringify(old)))
    }
    const fallback = await countedSummary(real, backend, 'old')
    expect([fallback.summary.unsettled, fallback.summary.indexed]).toEqual([
      { unknown: 5, submitted: 0, planned: 0 },
      false,
    ])
    // The head, then each of the 5 unknown effects (no marker says so), once.
    expect(fallback.gets).toBe(1 + 5)
    await reopen(real, backend, 'old', async () => undefined)
    expect((await listStates(backend, 'old')).unknown).toEqual(['e0', 'e2', 'e4', 'e6', 'e8'])
    const indexed = await countedSummary(real, backend, 'old', 1)
    expect([indexed.summary.unsettled.unknown, indexed.summary.indexed]).toEqual([5, true])
    expect(indexed.gets).toBe(1 + 1)
    const head = await backend.get('runs/old/run.json')
    expect(JSON.parse(decoder.decode(head?.value)).schemaVersion).toBe(2)
  })
})

describe('readEffects', () => {
  let backend: Backend
  beforeAll(async () => {
    backend = createMemoryBackend({ namespace: freshName('page') })
    const run = await real.openRun(backend, 'paged', {
      handlers: { pay: { ...handlers.pay, dispatch: async () => ({ ok: true }) } },
    })
    for (let i = 0; i < 100; i++) await run.effect('pay', `e${String(i).padStart(3, '0')}`, { i })
    await run.close()
  })
  const ids = Array.from({ length: 100 }, (_, i) => `e${String(i).padStart(3, '0')}`)

  async function expectOnePagedRead(rt: Runtime): Promise<void> {
    const counted = countingBackend(backend)
    const records = await rt.readEffects(counted.backend, 'paged', [...ids, 'absent'])
    expect(records.map((r) => r?.effectId ?? null)).toEqual([...ids, null])
    expect(records.every((r) => r === null || r.state === 'confirmed')).toBe(true)
    expect(counted.calls().get, 'readEffects: get calls').toBe(1 + 101)
  }

  it('reads the head once for a page of 100 effects (plus one id with no record)', async () => {
    await expectOnePagedRead(real)
  })

  it('fails on a page reader that reads the head per effect (mutant)', async () => {
    const rt = await mutated('../src/run/run-operator.js', (original) => ({
      ...original,
      readEffects: (b: Backend, runId: string, effectIds: readonly string[]) =>
        Promise.all(
          effectIds.map((id) => (original.readEffect as Runtime['readEffect'])(b, runId, id)),
        ),
    }))
    await expect(expectOnePagedRead(rt)).rejects.toThrow(/readEffects: get calls/)
  })
})

describe('the index checks catch (mutants)', () => {
  it('an open that does not repair the index', async () => {
    const rt = await mutated('../src/run/effect-state-index.js', (original) => ({
      ...original,
      repairUnknownIndex: async () => 0,
    }))
    await expect(crashInProcess(rt, 'enter-record')).rejects.toThrow(/repaired by the next open/)
  })

  it('a marker moved after the record, without the moving bracket (the window invisible)', async () => {
    const rt = await mutated('../src/run/effect-state-index.js', (original) => ({
      ...original,
      moveUnknownMarker: async (
        ctx: { backend: Backend; runId: string },
        record: { effectId: string; state: string },
        from: string | null,
        write: () => Promise<unknown>,
      ) => {
        const written = await write()
        const marker = `runs/${ctx.runId}/states/unknown/${record.effectId}`
        if (record.state === 'unknown' && from !== 'unknown')
          await ctx.backend.put(marker, new Uint8Array(0))
        if (from === 'unknown' && record.state !== 'unknown') await ctx.backend.delete(marker)
        return written
      },
    }))
    await expect(crashInProcess(rt, 'enter-record')).rejects.toThrow(/the crash window is visible/)
  })
})
