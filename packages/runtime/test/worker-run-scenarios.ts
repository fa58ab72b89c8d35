/**
 * Worker and run together (docs/runtime/workers.md, Worker and run) as
 * scenarios that return what they saw: worker-run.test.ts expects the
 * correct outcome, worker-run-mutants.test.ts runs them against broken
 * runtimes (mutants.ts) and expects the failure each check exists to catch.
 */

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freshName, redisConfig } from '@agent-state/backend-targets'
import {
  type Backend,
  createManualClock,
  isAgentStateError,
  type Lease,
  type ManualClock,
} from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { createRedisBackend } from '@agent-state/redis'
import { createSqliteBackend } from '@agent-state/sqlite'
import type { EffectHandlers, JsonValue } from '../src/index.js'
import { runHeadKey } from '../src/shared/layout.js'
import type { Runtime } from './mutants.js'

/** Storage shared by every instance a scenario opens, and how its leases run out. */
export interface RunStorage {
  open(): Backend
  /** Lets every lease taken with {@link RunBackendKind.ttlMs} run out. */
  expire(): Promise<void>
  cleanup(): Promise<void>
}

/** A backend the scenarios run on. */
export interface RunBackendKind {
  readonly name: string
  /** Lease TTL of the owners: long on a manual lease clock, a few seconds on a server clock. */
  readonly ttlMs: number
  setup(): RunStorage
}

function tracked(make: () => Backend, expire: () => Promise<void>, remove: () => void): RunStorage {
  const opened: Backend[] = []
  return {
    open() {
      const backend = make()
      opened.push(backend)
      return backend
    },
    expire,
    async cleanup() {
      for (const backend of opened) await backend.close()
      remove()
    },
  }
}

const MANUAL_TTL_MS = 30_000

/** On a `host` lease clock the manual clock moves expiry: no real waiting. */
function manual(
  make: (clock: ManualClock) => Backend,
  remove: () => void = () => undefined,
): RunStorage {
  const clock = createManualClock(Date.now())
  return tracked(
    () => make(clock),
    async () => clock.advance(MANUAL_TTL_MS + 1),
    remove,
  )
}

/** Memory, the filesystem and SQLite on a manual lease clock; Redis on its server's clock. */
export const RUN_BACKENDS: readonly RunBackendKind[] = [
  {
    name: 'memory',
    ttlMs: MANUAL_TTL_MS,
    setup: () => {
      const store = createMemoryStore()
      return manual((clock) => createMemoryBackend({ store, namespace: 'wr', clock: clock.now }))
    },
  },
  {
    name: 'fs',
    ttlMs: MANUAL_TTL_MS,
    setup: () => {
      const root = mkdtempSync(join(tmpdir(), 'agent-state-worker-run-'))
      return manual(
        (clock) => createFsBackend({ root, namespace: 'wr', clock: clock.now }),
        () => rmSync(root, { recursive: true, force: true }),
      )
    },
  },
  {
    name: 'sqlite',
    ttlMs: MANUAL_TTL_MS,
    setup: () => {
      const dir = mkdtempSync(join(tmpdir(), 'agent-state-worker-run-'))
      return manual(
        (clock) =>
          createSqliteBackend({ path: join(dir, 'state.db'), namespace: 'wr', clock: clock.now }),
        () => rmSync(dir, { recursive: true, force: true }),
      )
    },
  },
  {
    name: 'redis',
    // The server's clock: the stale owner's leases are waited out for real, so a short TTL,
    // yet several seconds so that a loaded machine does not lose the live owner's leases.
    ttlMs: 2500,
    setup: () => {
      const { host, port } = redisConfig()
      const namespace = freshName('wr')
      return tracked(
        () => createRedisBackend({ host, port, namespace }),
        async () => {
          await new Promise((resolve) => setTimeout(resolve, 2500 + 300))
        },
        () => undefined,
      )
    },
  },
]

/** An effect target kept in the test: what it applied, by effect id. */
export interface Target {
  readonly applied: Record<string, number>
  readonly handlers: EffectHandlers
  /** Holds the next dispatch of `effectId` after it applied, until the returned release is called. */
  hold(effectId: string): () => void
}

/** A target whose dispatch applies and counts; its reconcile answers from what it applied. */
export function countingTarget(): Target {
  const applied: Record<string, number> = {}
  const held = new Map<string, Promise<void>>()
  return {
    applied,
    hold(effectId) {
      let release: () => void = () => undefined
      held.set(
        effectId,
        new Promise<void>((resolve) => {
          release = resolve
        }),
      )
      return () => release()
    },
    handlers: {
      pay: {
        retrySafe: true,
        async dispatch(call) {
          applied[call.effectId] = (applied[call.effectId] ?? 0) + 1
          const gate = held.get(call.effectId)
          held.delete(call.effectId)
          if (gate !== undefined) await gate
          return { receipt: `r-${call.effectId}` }
        },
        async reconcile(call) {
          return (applied[call.effectId] ?? 0) > 0
            ? { status: 'confirmed', result: { receipt: `r-${call.effectId}` } }
            : { status: 'absent' }
        },
      },
    },
  }
}

/** The error code of `promise`'s rejection, or `'resolved'`. */
async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'resolved'
  } catch (error) {
    if (isAgentStateError(error)) return error.code
    throw error
  }
}

async function withStorage<T>(
  kind: RunBackendKind,
  body: (storage: RunStorage) => Promise<T>,
): Promise<T> {
  const storage = kind.setup()
  try {
    return await body(storage)
  } finally {
    await storage.cleanup()
  }
}

/** The worker audit events about its run. */
function runEvents(audit: readonly { event: string }[]): string[] {
  return audit.map((entry) => entry.event).filter((event) => event.startsWith('run_'))
}

/** What {@link resumeReopensRun} saw. */
export interface ReopenOutcome {
  readonly runLeaseAfterSuspend: string | null
  readonly resumedRunId: string | null
  readonly reopened: boolean
  readonly attemptCount: number | null
  readonly results: JsonValue[]
  readonly applied: Record<string, number>
  readonly runAudit: string[]
  /** Resumed after the run completed: the handle's run, and the run audit of that resume. */
  readonly afterCompleted: { readonly run: boolean; readonly runAudit: string[] }
  /** Resumed without `run`, then `reopenRun`: attempts then. */
  readonly lateReopen: { readonly before: boolean; readonly attemptCount: number }
  /** A worker that owns no run resumed with `run`: its run, run id and run audit. */
  readonly noRun: {
    readonly run: boolean
    readonly runId: string | null
    readonly runAudit: string[]
    readonly reopen: string
  }
  readonly secondRun: string
}

/**
 * A worker opens its run, performs e1 and parks (which releases the run). A
 * resume with `run` reopens the run under the new lease: e1 returns its
 * recorded result without dispatching, e2 is dispatched once. Then: a resume
 * without `run` followed by `reopenRun`; a resume after the run completed;
 * a worker with no run.
 */
export async function resumeReopensRun(rt: Runtime, kind: RunBackendKind): Promise<ReopenOutcome> {
  return withStorage(kind, async (storage) => {
    const backend = storage.open()
    const target = countingTarget()
    const run = { handlers: target.handlers }
    const owner = { holder: 'agent-1', leaseTtlMs: kind.ttlMs }
    const first = await rt.startWorker(backend, { ...owner, workerId: 'w1' })
    const opened = await first.openRun('r1', run)
    await opened.effect('pay', 'e1', { amount: 1 })
    const secondRun = await codeOf(first.openRun('r2', run))
    await first.suspend({ reason: 'waiting for review' })
    const runLease = await backend.getLease(runHeadKey('r1'))
    const resumed = await rt.resumeWorker(backend, 'w1', { ...owner, run })
    const reopened = resumed.run !== null
    const results: JsonValue[] = []
    if (resumed.run !== null) {
      results.push(await resumed.run.effect('pay', 'e1', { amount: 1 }))
      results.push(await resumed.run.effect('pay', 'e2', { amount: 2 }))
    }
    const attemptCount = resumed.run?.attemptCount ?? null
    const reopenedAudit = runEvents(resumed.audit)
    await resumed.suspend({ reason: 'again' })
    const late = await rt.resumeWorker(backend, 'w1', owner)
    const before = late.run !== null
    const lateRun = await late.reopenRun(run)
    await lateRun.complete()
    await late.suspend({ reason: 'after the run' })
    const afterCompleted = await rt.resumeWorker(backend, 'w1', { ...owner, run })
    const completedAudit = runEvents(afterCompleted.audit)
    await afterCompleted.complete()
    const plain = await rt.startWorker(backend, { ...owner, workerId: 'w2' })
    await plain.suspend({ reason: 'no run' })
    const noRun = await rt.resumeWorker(backend, 'w2', { ...owner, run })
    const reopen = await codeOf(noRun.reopenRun(run))
    return {
      runLeaseAfterSuspend: runLease?.holder ?? null,
      resumedRunId: resumed.runId,
      reopened,
      attemptCount,
      results,
      applied: { ...target.applied },
      runAudit: reopenedAudit,
      afterCompleted: { run: afterCompleted.run !== null, runAudit: completedAudit },
      lateReopen: { before, attemptCount: lateRun.attemptCount },
      noRun: {
        run: noRun.run !== null,
        runId: noRun.runId,
        runAudit: runEvents(noRun.audit),
        reopen,
      },
      secondRun,
    }
  })
}

/** What {@link staleOwnerFenced} saw. */
export interface FencedOutcome {
  /** The resume's outcome: `resolved` or an error code. */
  readonly resume: string
  readonly reopened: boolean
  /** The reconciler's rule for the effect the stale owner left `submitted`. */
  readonly e2Rule: string | null
  /** The stale owner's writes after the takeover, by what it tried. */
  readonly stale: { readonly e2Ack: string; readonly e3: string; readonly checkpoint: string }
  /** Holders and tokens of the two attempts. */
  readonly attempts: {
    readonly sameHolder: boolean
    readonly newerToken: boolean
  }
  readonly applied: Record<string, number>
  readonly runStatus: string | null
  readonly workerStatus: string
}

/**
 * The stale owner and the new one have the SAME holder name, so only the
 * fencing token tells them apart. Owner A opens its run, confirms e1 and is
 * in e2's dispatch (applied at the target, not recorded) when its leases run
 * out. Owner B (holder `agent-1` too) recovers the worker with `run`: e2 is
 * reconciled as confirmed, not dispatched again. Then A's dispatch returns:
 * its record of e2, its e3 and its checkpoint must all be refused
 * (`LEASE_LOST`), and B finishes e1-e3 with each applied once.
 * `seen` gets A's worker lease (the mutant test reopens under it).
 */
export async function staleOwnerFenced(
  rt: Runtime,
  kind: RunBackendKind,
  seen: (lease: Lease) => void = () => undefined,
): Promise<FencedOutcome> {
  return withStorage(kind, async (storage) => {
    const target = countingTarget()
    const owner = { holder: 'agent-1', leaseTtlMs: kind.ttlMs }
    const a = await rt.startWorker(storage.open(), { ...owner, workerId: 'w1' })
    if (a.lease !== null) seen(a.lease)
    const aRun = await a.openRun('r1', { handlers: target.handlers })
    await aRun.effect('pay', 'e1', { amount: 1 })
    const release = target.hold('e2')
    const inFlight = codeOf(aRun.effect('pay', 'e2', { amount: 2 }))
    while ((target.applied.e2 ?? 0) === 0) await new Promise((resolve) => setTimeout(resolve, 5))
    await storage.expire()
    const backend = storage.open()
    let b: Awaited<ReturnType<Runtime['resumeWorker']>> | null = null
    let resume = 'resolved'
    try {
      b = await rt.resumeWorker(backend, 'w1', {
        ...owner,
        recoverRunning: true,
        run: { handlers: target.handlers },
      })
    } catch (error) {
      if (!isAgentStateError(error)) throw error
      resume = error.code
    }
    release()
    const e2Ack = await inFlight
    const e3 = await codeOf(aRun.effect('pay', 'e3', { amount: 3 }))
    const checkpoint = await codeOf(a.checkpoint({ state: { by: 'stale' } }))
    const bRun = b?.run ?? null
    if (bRun !== null) {
      for (const [id, amount] of [
        ['e1', 1],
        ['e2', 2],
        ['e3', 3],
      ] as const)
        await bRun.effect('pay', id, { amount })
      await bRun.complete()
    }
    if (b !== null) await b.complete()
    const record = await rt.readEffect(backend, 'r1', 'e2')
    const reconciled = record?.history.find((h) => h.reason.startsWith('reconciler:'))
    const view = await rt.inspectRun(backend, 'r1').catch(() => null)
    return {
      resume,
      reopened: bRun !== null,
      e2Rule: reconciled?.reason ?? null,
      stale: { e2Ack, e3, checkpoint },
      attempts: {
        sameHolder: bRun !== null && bRun.attempt.holder === aRun.attempt.holder,
        newerToken: bRun !== null && bRun.attempt.token > aRun.attempt.token,
      },
      applied: { ...target.applied },
      runStatus: view?.head.status ?? null,
      workerStatus: (await rt.inspectWorker(backend, 'w1')).status,
    }
  })
}

/** What {@link wakeReopensRun} saw in the dispatcher's `onResumed`. */
export interface WakeReopenOutcome {
  /** Whether the woken worker's `run` was open when `onResumed` got it. */
  readonly reopened: boolean
  readonly attemptCount: number | null
  /** What e1 returned on the woken worker's run (its recorded result, not a new dispatch). */
  readonly e1: JsonValue | null
  readonly applied: Record<string, number>
  readonly runAudit: string[]
}

/**
 * A worker opens its run, performs e1 and parks on an event; the event is
 * published and a wake dispatcher whose `workers.run` names the run's
 * handlers resumes it: `onResumed` gets the worker with its run reopened
 * under the wake's resume, e1 answered from the ledger.
 */
export async function wakeReopensRun(
  rt: Runtime,
  kind: RunBackendKind,
): Promise<WakeReopenOutcome> {
  return withStorage(kind, async (storage) => {
    const backend = storage.open()
    const target = countingTarget()
    const run = { handlers: target.handlers }
    const owner = { holder: 'agent-1', leaseTtlMs: kind.ttlMs }
    const first = await rt.startWorker(backend, { ...owner, workerId: 'w1' })
    const opened = await first.openRun('r1', run)
    await opened.effect('pay', 'e1', { amount: 1 })
    await first.suspend({ reason: 'waiting for a fix', conditions: { onEvent: 'fix-chosen' } })
    await rt.publishEvent(backend, 'fix-chosen', { fix: 'retry' })
    let seen: WakeReopenOutcome | undefined
    const dispatcher = rt.startWakeDispatcher(backend, {
      handlers: {},
      dispatcherId: 'dispatcher',
      intervalMs: null,
      workers: {
        holder: 'agent-2',
        leaseTtlMs: kind.ttlMs,
        run,
        async onResumed(worker) {
          const e1 =
            worker.run === null ? null : await worker.run.effect('pay', 'e1', { amount: 1 })
          seen = {
            reopened: worker.run !== null,
            attemptCount: worker.run?.attemptCount ?? null,
            e1,
            applied: { ...target.applied },
            runAudit: runEvents(worker.audit),
          }
          await worker.complete()
        },
      },
    })
    try {
      await dispatcher.ready
      await dispatcher.tick()
    } finally {
      await dispatcher.stop()
    }
    if (seen === undefined) throw new Error('the dispatcher did not resume the worker')
    return seen
  })
}
