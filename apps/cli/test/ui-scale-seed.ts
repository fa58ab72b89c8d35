/**
 * The namespace `agent-state ui` is measured on at scale, seeded in bulk through the backend
 * and the runtime: `keys` keys `big/k-000000` … (64-byte values) and run `big` with `effects`
 * effects `e-00000` …, every even-numbered one unknown (its dispatch fails without a
 * rejection and its reconciliation cannot tell), every odd one confirmed, then
 * {@link SCALE_STEPS} committed steps whose outputs are each over the run page's cut, the run
 * closed.
 * Shared by test/ui-scale.test.ts and benchmarks/src/ui-views.ts and ui-render.ts (which import
 * it from here: the benchmarks depend on the CLI, never the other way round).
 */
import type { Backend } from '@agent-state/core'
import { openRun, type Run } from '@agent-state/runtime'

/** `i` with leading zeros to `width` digits (the seeded names sort in numeric order). */
export const pad = (i: number, width: number): string => String(i).padStart(width, '0')

/** The name of the `i`th seeded key. */
export const scaleKey = (i: number): string => `big/k-${pad(i, 6)}`

/** The id of the `i`th effect of run `big`. */
export const scaleEffect = (i: number): string => `e-${pad(i, 5)}`

/** How many of `effects` seeded effects are unknown (the even-numbered ones). */
export const unknownOf = (effects: number): number => Math.ceil(effects / 2)

/** How many steps run `big` commits (more than a page of the run's view: 10). */
export const SCALE_STEPS = 25

/**
 * The outputs of run `big`'s step `seq`: 6,000 characters of text, over the run page's cut of
 * a step's outputs (4 KiB), so a page of steps shows each one's first bytes and size.
 */
export const scaleStepOutputs = (seq: number) => ({ seq, text: `${seq}:`.padEnd(6000, 'o') })

/** Seeds `backend` with `keys` keys under `big/` and run `big` of `effects` effects (above). */
export async function seedUiScale(
  backend: Backend,
  sizes: { readonly keys: number; readonly effects: number },
): Promise<void> {
  const value = new TextEncoder().encode('v'.repeat(64))
  let next = 0
  // 16 writers at once: the seeding waits on the backend, not on this process.
  const putter = async () => {
    while (next < sizes.keys) await backend.put(scaleKey(next++), value)
  }
  await Promise.all(Array.from({ length: 16 }, putter))
  const run = await seedScaleRun(backend, sizes.effects)
  for (let seq = 1; seq <= SCALE_STEPS; seq++)
    await run.commitStep(`step-${seq}`, scaleStepOutputs(seq), {
      next: seq < SCALE_STEPS ? `step-${seq + 1}` : null,
    })
  await run.close()
}

/**
 * Opens run `big` and records its `effects` effects (above); the run is left open, so a
 * caller can add a step before it closes it.
 */
export async function seedScaleRun(backend: Backend, effects: number): Promise<Run> {
  const run = await openRun(backend, 'big', {
    handlers: {
      pay: {
        retrySafe: false,
        reconcile: async () => ({ status: 'unknown' as const }),
        // A failure that is not a rejection leaves the effect unknown.
        dispatch: async (call) => {
          if ((call.request as { i: number }).i % 2 === 0) throw new Error('connection reset')
          return { ok: true }
        },
      },
    },
  })
  for (let i = 0; i < effects; i++) {
    await run.effect('pay', scaleEffect(i), { i }).catch((error: { code?: string }) => {
      if (error.code !== 'EFFECT_UNKNOWN') throw error
    })
  }
  return run
}

/**
 * Run `runId` with `steps` committed steps (outputs `{ seq }`) and no effect, closed: more
 * steps than one listing page of the run's view (1,000), to find its newest by search.
 */
export async function seedStepsRun(backend: Backend, runId: string, steps: number): Promise<void> {
  const run = await openRun(backend, runId, { handlers: {} })
  for (let seq = 1; seq <= steps; seq++)
    await run.commitStep(`step-${seq}`, { seq }, { next: seq < steps ? `step-${seq + 1}` : null })
  await run.close()
}
