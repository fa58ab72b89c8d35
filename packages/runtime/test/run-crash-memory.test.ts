import type { Backend, PutOptions } from '@agent-state/core'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type EffectHandlers,
  idempotencyKeyOf,
  inspectRun,
  openRun,
  type Run,
  readEffect,
} from '../src/index.js'
import { runEffectKey } from '../src/internal.js'
import { LEDGER_CRASH_CYCLES } from './crash-cycles.js'
import { type Provider, paymentHandler, startProvider } from './provider.js'

/**
 * The memory backend lives in one process, so its "kill -9" is simulated in
 * process: at the boundary the owner's dispatch (or ledger write) never
 * settles and the `Run` handle is abandoned without releasing anything; a
 * fresh backend instance on the same store resumes once the leases lapse (on the
 * backends' shared clock, moved past the TTL).
 * Same cycle count knob as the multi-process crash test.
 */
const CYCLES = LEDGER_CRASH_CYCLES
const BOUNDARIES = ['before-dispatch', 'before-ack', 'before-record', 'during-write'] as const
const EFFECT_IDS = ['e1', 'e2', 'e3'] as const
// Long on purpose: the test moves the backends' clock past it instead of waiting, and a
// short lease expired under a loaded CI host before the owner reached its crash (150 ms did:
// the owner lost its lease at e1 and the cycle waited for a crash that never came).
const TTL_MS = 30_000
const never = new Promise<never>(() => undefined)

let provider: Provider
beforeAll(async () => {
  provider = await startProvider()
})
afterAll(async () => {
  await provider.stop()
})

async function workflow(run: Run): Promise<void> {
  if (run.position.seq === 0) {
    const r1 = await run.effect('pay', 'e1', { amount: 10 })
    const r2 = await run.effect('pay', 'e2', { amount: 20 })
    await run.commitStep('charge', { r1, r2 }, { next: 'notify' })
  }
  if (run.position.step === 'notify') {
    const r3 = await run.effect('pay', 'e3', { amount: 30 })
    await run.commitStep('notify', { r3 }, { next: null })
  }
  await run.complete()
}

describe('simulated crashes at every effect boundary on memory', () => {
  it(`${CYCLES} cycles: nothing confirmed applies twice, nothing required is skipped`, async () => {
    const store = createMemoryStore()
    // The memory backend judges leases on an injectable clock: the wait for a dead owner's
    // lease to lapse moves this clock on instead of sleeping through the TTL in every cycle.
    let skipped = 0
    const clock = () => Date.now() + skipped
    const fresh = () => createMemoryBackend({ store, namespace: 'crash', clock })
    const reader = fresh()
    for (let cycle = 0; cycle < CYCLES; cycle++) {
      const boundary = BOUNDARIES[cycle % BOUNDARIES.length] ?? 'before-dispatch'
      const crashId = EFFECT_IDS[Math.floor(cycle / BOUNDARIES.length) % EFFECT_IDS.length] ?? 'e1'
      const runId = `mem-crash-${cycle}`
      const pay = paymentHandler(provider.url)
      let crashed: () => void = () => undefined
      const crash = new Promise<void>((resolve) => {
        crashed = resolve
      })
      const dying: EffectHandlers = {
        pay: {
          ...pay,
          dispatch: async (call) => {
            if (call.effectId !== crashId) return pay.dispatch(call)
            if (boundary === 'before-dispatch') {
              crashed()
              return never
            }
            const result = await pay.dispatch(call)
            crashed() // before-ack and before-record: the target applied, the owner never learns or records it
            return boundary === 'during-write' ? result : never
          },
        },
      }
      let owner: Backend = fresh()
      if (boundary === 'during-write') {
        const inner = owner
        const state = ['planned', 'submitted', 'confirmed'][cycle % 3] ?? 'confirmed'
        owner = Object.assign(Object.create(inner) as Backend, {
          put(key: string, value: Uint8Array, options?: PutOptions) {
            if (
              key === runEffectKey(runId, crashId) &&
              new TextDecoder().decode(value).includes(`"state":"${state}"`)
            ) {
              crashed()
              // The write lands or not, and the owner never hears back.
              return cycle % 2 === 0 ? inner.put(key, value, options).then(() => never) : never
            }
            return inner.put(key, value, options)
          },
        })
      }
      const first = await openRun(owner, runId, { handlers: dying, leaseTtlMs: TTL_MS })
      // The dead owner's workflow never settles once it crashed; if it settles before (it
      // failed, or finished without reaching the boundary), the cycle fails here at once.
      const dead = workflow(first).then(() => {
        throw new Error(`${runId}: the first owner finished without reaching ${boundary}`)
      })
      await Promise.race([crash, dead])
      // Let what the dead owner had in flight land (or not), then let its leases lapse.
      await new Promise((resolve) => setTimeout(resolve, 10))
      skipped += TTL_MS + 50
      const resumed = await openRun(fresh(), runId, { handlers: { pay }, leaseTtlMs: 5000 })
      await workflow(resumed)
      const log = await provider.log()
      const view = await inspectRun(reader, runId)
      expect(view.head.status).toBe('completed')
      for (const effectId of EFFECT_IDS) {
        const record = await readEffect(reader, runId, effectId)
        expect(record?.state, `${runId}/${effectId} ${boundary}`).toBe('confirmed')
        expect(
          log.applied[idempotencyKeyOf(runId, effectId)],
          `${runId}/${effectId} ${boundary}`,
        ).toBe(1)
      }
    }
  }, 600_000)
})
