/**
 * The idle-daemon scenarios of daemon-idle.test.ts, written against a
 * runtime module passed in, so that daemon-idle-mutants.test.ts runs the
 * same steps against a deliberately broken runtime and sees them fail.
 */
import type { Backend } from '@agent-state/core'
import type * as runtime from '../src/index.js'
import type { BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { withFailingPuts } from './failing-backend.js'
import { sleep } from './queue-helpers.js'

/** The runtime's public module (the real one, or one with a mutated part). */
export type Runtime = typeof runtime

/** The backends the idle bug was reproduced on, plus memory. */
export const IDLE_BACKENDS = ['memory', 'fs', 'sqlite', 'redis']

/** The reproduction's worker lease and idle time (issue: 1000 ms, idle 1.5 s). */
export const REPRO_TTL_MS = 1000
export const REPRO_IDLE_MS = 1500
/**
 * The other idle scenarios only need the lease to lapse, after their own steps ran inside it:
 * 1500 ms, not 400 (a clean run at load 20-28 took longer than 400 ms from the spawn to the ack
 * on fs and SQLite, so the ack took another path and the injected failure hit the next claim).
 */
const TTL_MS = 1500
const IDLE_MS = 1700

async function storedApp(rt: Runtime, backend: Backend, daemonId: string): Promise<unknown> {
  return ((await rt.inspectWorker(backend, daemonId)).state as { app: unknown }).app
}

function turnOf(delivery: { seq: number; attempt: number } | null): [number, number] | null {
  return delivery === null ? null : [delivery.seq, delivery.attempt]
}

/**
 * The reproduction: idle past the lease TTL without a heartbeat,
 * then an event, `next()` and `ack` with a state update.
 */
export async function idleThenAck(rt: Runtime, fixture: BackendFixture) {
  const backend = fixture.create()
  const daemon = await rt.spawnDaemon(backend, {
    daemonId: 'idler',
    leaseTtlMs: REPRO_TTL_MS,
    state: { handled: [] },
  })
  await sleep(REPRO_IDLE_MS)
  await daemon.trigger({ id: 'e1' })
  const turn = await daemon.next()
  if (turn === null) throw new Error('no delivery')
  const ack = await codeOf(daemon.ack(turn, { state: { handled: ['e1'] } }))
  return {
    turn: turnOf(turn),
    ack,
    counts: await daemon.queue.counts(),
    stored: await storedApp(rt, fixture.create(), 'idler'),
    audit: (await rt.inspectWorker(fixture.create(), 'idler')).audit.map((entry) => entry.event),
    after: turnOf(await daemon.next()),
  }
}

/**
 * Another owner takes the daemon over while it idles: the idle one must
 * refuse to claim and store nothing; the new owner gets the event.
 */
export async function takeoverDuringIdle(rt: Runtime, fixture: BackendFixture) {
  const idle = await rt.spawnDaemon(fixture.create(), {
    daemonId: 'taken',
    holder: 'a',
    leaseTtlMs: TTL_MS,
    state: { handled: [] },
  })
  await sleep(IDLE_MS)
  const owner = await rt.resumeDaemon(fixture.create(), 'taken', {
    holder: 'b',
    recoverRunning: true,
  })
  await owner.trigger({ id: 'e1' })
  const refused = await codeOf(idle.next())
  const countsAfterRefusal = await owner.queue.counts()
  const stopRefused = await codeOf(idle.stop('late stop', { state: { handled: ['stale'] } }))
  const storedBefore = await storedApp(rt, fixture.create(), 'taken')
  const turn = await owner.next()
  if (turn === null) throw new Error('no delivery for the new owner')
  await owner.ack(turn, { state: { handled: ['e1'], by: 'b' } })
  return {
    refused,
    stopRefused,
    countsAfterRefusal,
    storedBefore,
    ownerTurn: turnOf(turn),
    stored: await storedApp(rt, fixture.create(), 'taken'),
    counts: await owner.queue.counts(),
  }
}

/**
 * First order of failure, by a real takeover: the daemon claims, idles
 * mid-turn past its TTL, another owner takes over, and the idle one's `ack`
 * with an update comes too late. Its checkpoint is refused, so the event
 * must not be acknowledged either: the new owner gets it again.
 */
export async function checkpointRefusedAfterTakeover(rt: Runtime, fixture: BackendFixture) {
  const idle = await rt.spawnDaemon(fixture.create(), {
    daemonId: 'midturn',
    holder: 'a',
    leaseTtlMs: TTL_MS,
    state: { handled: [] },
  })
  await idle.trigger({ id: 'e1' })
  const turn = await idle.next()
  if (turn === null) throw new Error('no delivery')
  await sleep(IDLE_MS)
  const owner = await rt.resumeDaemon(fixture.create(), 'midturn', {
    holder: 'b',
    recoverRunning: true,
  })
  const ack = await codeOf(idle.ack(turn, { state: { handled: ['e1'], by: 'a' } }))
  const counts = await owner.queue.counts()
  const stored = await storedApp(rt, fixture.create(), 'midturn')
  const again = await owner.next()
  return { ack, head: counts.head, stored, redelivered: turnOf(again) }
}

/**
 * First order of failure, injected: the checkpoint of `ack` fails (the
 * write that would come after the acknowledgement in an ack-first order).
 */
export async function checkpointFails(rt: Runtime, fixture: BackendFixture) {
  const backend = withFailingPuts(fixture.create())
  const daemon = await rt.spawnDaemon(backend, { daemonId: 'cpfail', state: { handled: [] } })
  await daemon.trigger({ id: 'e1' })
  const turn = await daemon.next()
  if (turn === null) throw new Error('no delivery')
  backend.failNextPut(/^workers\/cpfail\/snapshot\.json$/)
  const ack = await codeOf(daemon.ack(turn, { state: { handled: ['e1'] } }))
  const counts = await daemon.queue.counts()
  const stored = await storedApp(rt, fixture.create(), 'cpfail')
  const again = await daemon.next()
  const retried =
    again === null ? 'none' : await codeOf(daemon.ack(again, { state: { handled: ['e1'] } }))
  return {
    refused: backend.refused,
    ack,
    head: counts.head,
    stored,
    redelivered: turnOf(again),
    retried,
    finalStored: await storedApp(rt, fixture.create(), 'cpfail'),
    finalCounts: await daemon.queue.counts(),
  }
}

/**
 * Second order of failure: the checkpoint lands and the head write of the
 * acknowledgement fails. The turn stands; the event is never handed out
 * again, by this handle (`sameHandle`) or by an owner that takes over after
 * this process is gone.
 */
export async function ackFailsAfterCheckpoint(
  rt: Runtime,
  fixture: BackendFixture,
  recovery: 'sameHandle' | 'newOwner',
) {
  const backend = withFailingPuts(fixture.create())
  const daemon = await rt.spawnDaemon(backend, {
    daemonId: 'headfail',
    leaseTtlMs: TTL_MS,
    visibilityTimeoutMs: TTL_MS,
    state: { handled: [] },
  })
  await daemon.trigger({ id: 'e1' })
  await daemon.trigger({ id: 'e2' })
  const turn = await daemon.next()
  if (turn === null) throw new Error('no delivery')
  backend.failNextPut(/^daemons\/headfail\/head\.json$/)
  const ack = await codeOf(daemon.ack(turn, { state: { handled: ['e1'] } }))
  const countsAfterAck = await daemon.queue.counts()
  const stored = await rt.inspectWorker(fixture.create(), 'headfail')
  let consumer = daemon
  if (recovery === 'newOwner') {
    // This process is gone: its worker lease lapses and another owner recovers the daemon.
    await sleep(IDLE_MS)
    consumer = await rt.resumeDaemon(fixture.create(), 'headfail', {
      holder: 'b',
      recoverRunning: true,
    })
  }
  const next = await consumer.next()
  const countsAtNext = await consumer.queue.counts()
  return {
    refused: backend.refused,
    ack,
    headAfterAck: countsAfterAck.head,
    stored: stored.state,
    iterationsCompleted: stored.iterationsCompleted,
    next: next === null ? null : { turn: turnOf(next), event: next.event },
    countsAtNext,
  }
}
