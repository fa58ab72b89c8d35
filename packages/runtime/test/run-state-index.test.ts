/**
 * The run's per-state index of unsettled effects (effect-state-index.ts,
 * docs/runtime/runs-and-effects.md, Counting effects by state):
 *
 * - crash windows: a process SIGKILLed between an effect record's write and a state-marker
 *   update (every one of the six windows, in a child process, on SQLite and the filesystem)
 *   leaves the effect *ambiguous* in the listing, never under a wrong single marker, so
 *   `summarizeRun`'s counts are right straight after the crash; the next owner's open
 *   repairs the index, after which a summary reads no effect beyond its first ones;
 * - runs written by the previous runtime (ledger schema version 1, no index) are counted
 *   right (every unsettled effect read) and indexed by their next open; this runtime writes
 *   version 2, which a version-1 runtime refuses (run-integrity.test.ts: a version newer
 *   than the runtime reads is `RUN_RECORD_INCOMPATIBLE`);
 * - `readEffects` reads the head once for a page.
 *
 * Committed mutants: no repair on open, the record written before its marker moves, and a
 * page reader that reads the head per effect, each fail the checks.
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
import { runFixtureChild } from './fixture-child.js'
import { mutated, type Runtime, unmockAll } from './mutants.js'

afterEach(unmockAll)

const WINDOWS = [
  'planned-marker',
  'planned-record',
  'submitted-marker',
  'submitted-record',
  'settled-unmark',
  'settled-record',
] as const
type Window = (typeof WINDOWS)[number]
/** The dead owner's lease; the next owner waits it out. */
const LEASE_TTL_MS = 2000

const handlers = {
  pay: {
    retrySafe: false,
    reconcile: async () => ({ status: 'unknown' as const }),
    dispatch: async () => ({ ok: true }),
  },
}

/** `backend` counting its `get` calls. */
function countingGets(backend: Backend): { backend: Backend; gets: () => number } {
  let gets = 0
  const wrapped = new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return (...args: unknown[]) => {
        if (property === 'get') gets++
        return value.apply(target, args)
      }
    },
  })
  return { backend: wrapped, gets: () => gets }
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
 * after the next owner opened the run, no ambiguity, markers that match the record, and a
 * summary reading the head and the one effect at most.
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
  const known = Object.fromEntries(
    Object.entries(after.known).map(([state, ids]) => [state, ids.length]),
  )
  expect(known, `${window}: markers after the repair`).toEqual(counts)
  const counted = countingGets(backend)
  expect((await rt.summarizeRun(counted.backend, runId)).unsettled).toEqual(counts)
  expect(counted.gets(), `${window}: summary reads after the repair`).toBeLessThanOrEqual(2 + 1)
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

describe.each(MULTI_PROCESS_BACKENDS.filter((b) => b.name === 'sqlite' || b.name === 'fs'))(
  'kill -9 inside an effect state change, on $name',
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
  const [op, key, state] = {
    'planned-marker': ['put', `runs/${runId}/states/planned/e1`],
    'planned-record': ['put', `runs/${runId}/effects/e1.json`, 'planned'],
    'submitted-marker': ['put', `runs/${runId}/states/submitted/e1`],
    'submitted-record': ['put', `runs/${runId}/effects/e1.json`, 'submitted'],
    'settled-unmark': ['delete', `runs/${runId}/states/submitted/e1`],
    'settled-record': ['put', `runs/${runId}/effects/e1.json`, 'confirmed'],
  }[window]
  let dead = false
  const dying = new Proxy(backend, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function') return value
      return async (...args: unknown[]) => {
        if (dead) throw new Error('dead')
        const answer = await value.apply(target, args)
        const [k, bytes] = args as [string, Uint8Array | undefined]
        if (
          property === op &&
          k === key &&
          (state === undefined || new TextDecoder().decode(bytes).includes(`"state":"${state}"`))
        ) {
          dead = true
        }
        return answer
      }
    },
  })
  const run = await rt.openRun(dying, runId, {
    handlers,
    leaseTtlMs: LEASE_TTL_MS,
    clock: clock.now,
  })
  // The call fails one way or another (the raw death, or EFFECT_UNKNOWN around it): what
  // matters is that the owner died at the window.
  await run.effect('pay', 'e1', { amount: 1 }).catch(() => undefined)
  expect(dead, `${window}: the owner died at the window`).toBe(true)
  await expectVisibleThenRepaired(rt, backend, runId, window, async () => {
    clock.advance(LEASE_TTL_MS + 1)
  })
}

describe('kill inside an effect state change, in process on memory', () => {
  it.each(WINDOWS)('%s: visible, counted right, repaired by the next open', async (window) => {
    await crashInProcess(real, window)
  })
})

describe('a run written by the previous runtime (schema version 1, no state index)', () => {
  it('is counted right by reading its unsettled effects, and indexed by its next open (version 2)', async () => {
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
    // What the previous runtime left: the same records at version 1, and no state markers.
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
      await backend.put(
        key,
        new TextEncoder().encode(JSON.stringify({ ...envelope, schemaVersion: 1 })),
      )
    }
    const fallback = countingGets(backend)
    expect((await real.summarizeRun(fallback.backend, 'old')).unsettled).toEqual({
      unknown: 5,
      submitted: 0,
      planned: 0,
    })
    // The head, then each of the 5 unknown effects (ambiguous without the index), once.
    expect(fallback.gets()).toBe(1 + 5)
    await reopen(real, backend, 'old', async () => undefined)
    expect((await listStates(backend, 'old')).known.unknown).toEqual(['e0', 'e2', 'e4', 'e6', 'e8'])
    const indexed = countingGets(backend)
    expect((await real.summarizeRun(indexed.backend, 'old', 1)).unsettled.unknown).toBe(5)
    expect(indexed.gets()).toBe(1 + 1)
    const head = await backend.get('runs/old/run.json')
    expect(JSON.parse(decoder.decode(head?.value)).schemaVersion).toBe(2)
  })
})

describe('readEffects', () => {
  let backend: Backend
  beforeAll(async () => {
    backend = createMemoryBackend({ namespace: freshName('page') })
    const run = await real.openRun(backend, 'paged', { handlers })
    for (let i = 0; i < 100; i++) await run.effect('pay', `e${String(i).padStart(3, '0')}`, { i })
    await run.close()
  })
  const ids = Array.from({ length: 100 }, (_, i) => `e${String(i).padStart(3, '0')}`)

  async function expectOnePagedRead(rt: Runtime): Promise<void> {
    const counted = countingGets(backend)
    const records = await rt.readEffects(counted.backend, 'paged', [...ids, 'absent'])
    expect(records.map((r) => r?.effectId ?? null)).toEqual([...ids, null])
    expect(records.every((r) => r === null || r.state === 'confirmed')).toBe(true)
    expect(counted.gets(), 'readEffects: get calls').toBe(1 + 101)
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
      repairStateIndex: async () => 0,
    }))
    await expect(crashInProcess(rt, 'submitted-record')).rejects.toThrow(
      /repaired by the next open/,
    )
  })

  it('a record written before its marker moves (a wrong single marker in the window)', async () => {
    const rt = await mutated('../src/run/effect-state-index.js', (original) => ({
      ...original,
      moveStateMarker: async (
        ctx: { backend: Backend; runId: string },
        record: { effectId: string; state: string },
        from: string | null,
        write: () => Promise<unknown>,
      ) => {
        const written = await write()
        const unsettled = ['unknown', 'submitted', 'planned']
        const marker = (s: string) => `runs/${ctx.runId}/states/${s}/${record.effectId}`
        if (unsettled.includes(record.state) && from !== record.state)
          await ctx.backend.put(marker(record.state), new Uint8Array(0))
        if (from !== null && unsettled.includes(from) && from !== record.state)
          await ctx.backend.delete(marker(from))
        return written
      },
    }))
    await expect(crashInProcess(rt, 'submitted-record')).rejects.toThrow(
      /the crash window is visible/,
    )
  })
})
