/**
 * What one effect costs in backend calls on the normal path (new → planned → submitted →
 * confirmed or failed), counted on the memory backend between the run's open and its close:
 * exactly what it cost before the run kept an index of its unknown effects
 * (effect-state-index.ts, docs/runtime/runs-and-effects.md, Counting effects by state). The
 * index's markers move only when an effect enters or leaves `unknown`.
 *
 * Committed mutant: an index that moves a marker on every state change fails the count.
 */
import { freshName } from '@agent-state/backend-targets'
import type { Backend } from '@agent-state/core'
import { createMemoryBackend } from '@agent-state/memory'
import { afterEach, describe, expect, it } from 'vitest'
import * as real from '../src/index.js'
import { countingBackend } from './counting-backend.js'
import { mutated, type Runtime, unmockAll } from './mutants.js'

afterEach(unmockAll)

/**
 * One effect's calls before the index, measured on main (5761559, this file run against its
 * runtime): the read of the effect, the record's per-key lease (acquire, then a renewal), four
 * puts (the planned record, its incomplete-marker, the submitted record, the outcome record)
 * and the incomplete-marker's delete. The previous per-state index made it 6 puts and 3
 * deletes.
 */
const BEFORE = { get: 1, acquireLease: 1, renewLease: 1, put: 4, delete: 1 }
const CALLS_BEFORE_THE_INDEX = { confirmed: BEFORE, failed: BEFORE } as const

/** The backend calls of `run.effect` for one effect whose dispatch answers `outcome`: as before the index. */
async function expectCallsAsBefore(rt: Runtime, outcome: 'confirmed' | 'failed'): Promise<void> {
  const counted = countingBackend(createMemoryBackend({ namespace: freshName('calls') }))
  const run = await rt.openRun(counted.backend, 'r', {
    handlers: {
      pay: {
        retrySafe: false,
        reconcile: async () => ({ status: 'unknown' as const }),
        dispatch: async () => {
          if (outcome === 'failed') throw rt.effectRejected('declined', 'card')
          return { ok: true }
        },
      },
    },
  })
  counted.reset()
  await run.effect('pay', 'e1', { amount: 1 }).catch((error: { code?: string }) => {
    if (error.code !== 'EFFECT_FAILED') throw error
  })
  const calls = counted.calls()
  await run.close()
  const record = await rt.readEffect(counted.backend, 'r', 'e1')
  expect(record?.state).toBe(outcome)
  console.info(`${outcome} effect: backend calls ${JSON.stringify(calls)}`)
  expect(calls, `${outcome} effect: backend calls`).toEqual(CALLS_BEFORE_THE_INDEX[outcome])
}

describe('one effect on the normal path', () => {
  it.each(['confirmed', 'failed'] as const)(
    '%s: the same backend calls as before the index',
    async (outcome) => {
      await expectCallsAsBefore(real, outcome)
    },
  )

  it('fails on an index that moves a marker on every state change (mutant)', async () => {
    const rt = await mutated('../src/run/effect-state-index.js', (original) => ({
      ...original,
      moveUnknownMarker: async (
        ctx: { backend: Backend; runId: string },
        record: { effectId: string },
        _from: unknown,
        write: () => Promise<unknown>,
      ) => {
        const moving = `runs/${ctx.runId}/states/moving/${record.effectId}`
        await ctx.backend.put(moving, new Uint8Array(0))
        const written = await write()
        await ctx.backend.delete(moving)
        return written
      },
    }))
    await expect(expectCallsAsBefore(rt, 'confirmed')).rejects.toThrow(
      /confirmed effect: backend calls/,
    )
  })
})
