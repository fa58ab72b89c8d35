import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshName, MULTI_PROCESS_BACKENDS } from '@agent-state/backend-targets'
import type { Backend } from '@agent-state/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type EffectRecord, idempotencyKeyOf, inspectRun, readEffect } from '../src/index.js'
import { LEDGER_CRASH_CYCLES } from './crash-cycles.js'
import { runFixtureChild } from './fixture-child.js'
import { type Provider, type ProviderLog, startProvider } from './provider.js'

/**
 * Crash cycles per backend: `AGENT_STATE_CRASH_CYCLES` (default 50, floor 10:
 * `crash-cycles.ts`). Each
 * cycle is one child process that resumes the previous cycle's run in a
 * fresh process and then starts a new run and is killed (SIGKILL) at one of
 * the four boundaries, round-robin, at one of its three effects.
 * `AGENT_STATE_CRASH_CHAINS` (default 4) chains of cycles run side by side.
 */
const CYCLES = LEDGER_CRASH_CYCLES
const BOUNDARIES = ['before-dispatch', 'before-ack', 'before-record', 'during-write'] as const
const EFFECT_IDS = ['e1', 'e2', 'e3'] as const
/**
 * Independent chains of cycles run side by side (the cycles are split among them, so the
 * count stays CYCLES). Four, since a cycle mostly waits: for the dead owner's lease to lapse
 * (leaseTtlMsOn, twice that on S3's observer clock) before its resume can start.
 */
const CHAINS = Math.max(1, Number(process.env.AGENT_STATE_CRASH_CHAINS ?? 4))
/**
 * Lease of the runs that crash: the next cycle's resume waits it out. The run renews it only
 * as it takes each effect's lease, so the child's steps between two effects must fit in it:
 * on S3 at load 20-28 they did not in 2000 ms (the child died LEASE_LOST before its kill), so
 * S3 gets twice as long (its resume then waits 8 s, on its observer clock).
 */
function leaseTtlMsOn(name: string): number {
  return name === 's3' ? 4000 : 2000
}

/** A crash-cycle child: `test/fixtures/run-crash-child.ts` with `args`. */
function runChild(args: readonly string[], env: Readonly<Record<string, string>>) {
  return runFixtureChild('test/fixtures/run-crash-child.ts', args, env)
}

/** Whether every later attempt's first touch of an effect left `submitted` went through the reconciler. */
function reconciledAfterSubmit(record: EffectRecord): boolean {
  const submittedBy = record.history.find((h) => h.state === 'submitted')?.attemptId
  if (submittedBy === undefined) return true
  const later = record.history.find((h) => h.attemptId !== submittedBy && h.state !== 'planned')
  return later === undefined || /^(reconciler:|redispatch:)/.test(later.reason)
}

describe.each(MULTI_PROCESS_BACKENDS)(
  'kill -9 at every effect boundary, resume in a fresh process, on $name',
  ({ name, target: make }) => {
    let dir: string
    let provider: Provider
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'agent-state-runtime-crash-'))
      provider = await startProvider()
    })
    afterAll(async () => {
      await provider.stop()
      rmSync(dir, { recursive: true, force: true })
    })

    it(
      `${CYCLES} cycles: nothing confirmed applies twice, nothing required is skipped, every unknown is reconciled`,
      async () => {
        const target = make(dir)
        const namespace = freshName('crash')
        const backend: Backend = await target.open(namespace)
        const runIds = Array.from({ length: CYCLES }, (_, i) => `${name}-crash-${i}`)
        const tally = {
          crashes: {} as Record<string, number>,
          reconciledConfirmed: 0,
          redispatched: 0,
          verified: 0,
        }
        const started = Date.now()

        const verify = async (runId: string, log: ProviderLog) => {
          const view = await inspectRun(backend, runId)
          expect(view.head.status, runId).toBe('completed')
          expect(view.incomplete, runId).toEqual([])
          expect(view.steps, runId).toBe(2)
          for (const effectId of EFFECT_IDS) {
            const key = idempotencyKeyOf(runId, effectId)
            const record = await readEffect(backend, runId, effectId)
            expect(record?.state, `${runId}/${effectId}`).toBe('confirmed')
            // Applied exactly once at the target: never twice, never skipped.
            expect(log.applied[key], `${runId}/${effectId} applied`).toBe(1)
            expect(record?.result).toEqual(log.results[key])
            expect(
              reconciledAfterSubmit(record as EffectRecord),
              JSON.stringify(record?.history),
            ).toBe(true)
            const reasons = record?.history.map((h) => h.reason) ?? []
            if (reasons.includes('reconciler:confirmed')) tally.reconciledConfirmed++
            if (reasons.some((r) => r.startsWith('redispatch:'))) tally.redispatched++
          }
          tally.verified++
        }

        const chain = async (ids: readonly string[], offset: number) => {
          for (let step = 0; step <= ids.length; step++) {
            const cycle = offset + step * CHAINS
            const boundary = BOUNDARIES[cycle % BOUNDARIES.length] ?? 'before-dispatch'
            const index = Math.floor(cycle / BOUNDARIES.length) % EFFECT_IDS.length
            const resume = step > 0 ? (ids[step - 1] ?? '-') : '-'
            const start = step < ids.length ? (ids[step] ?? '-') : '-'
            const result = await runChild(
              [
                target.url,
                namespace,
                provider.url,
                resume,
                start,
                boundary,
                String(index),
                String(leaseTtlMsOn(name)),
              ],
              target.env,
            )
            const context = `cycle ${cycle} (${boundary} at ${EFFECT_IDS[index]}): ${result.stderr.slice(-2000)} ${JSON.stringify(result.lines)}`
            const log = await provider.log()
            if (resume !== '-') {
              expect(result.lines[0], context).toMatchObject({ resumed: resume })
              await verify(resume, log)
            }
            if (start === '-') {
              expect(result.code, context).toBe(0)
              continue
            }
            expect(result.signal, context).toBe('SIGKILL')
            tally.crashes[boundary] = (tally.crashes[boundary] ?? 0) + 1
            const effectId = EFFECT_IDS[index] ?? 'e1'
            const key = idempotencyKeyOf(start, effectId)
            const record = await readEffect(backend, start, effectId)
            // The crash happened where it was meant to: the ledger and the target agree on the boundary.
            if (boundary === 'before-dispatch') {
              expect(record?.state, context).toBe('submitted')
              expect(log.applied[key] ?? 0, context).toBe(0)
            } else if (boundary === 'before-ack' || boundary === 'before-record') {
              expect(record?.state, context).toBe('submitted')
              expect(log.applied[key], context).toBe(1)
              if (boundary === 'before-ack') expect(log.kills, context).toContain(key)
            } else {
              expect(result.lines.at(-1), context).toMatchObject({ crashed: 'during-write' })
            }
          }
        }
        try {
          await Promise.all(
            Array.from({ length: CHAINS }, (_, k) =>
              chain(
                runIds.filter((_, i) => i % CHAINS === k),
                k,
              ),
            ),
          )
        } finally {
          await backend.close()
        }
        expect(tally.verified).toBe(CYCLES)
        console.info(
          `${name}: ${CYCLES} crash cycles in ${((Date.now() - started) / 1000).toFixed(1)} s; crashes ${JSON.stringify(tally.crashes)}; reconciled confirmed ${tally.reconciledConfirmed}, re-dispatched after absent ${tally.redispatched}`,
        )
      },
      30 * 60_000,
    )
  },
)
