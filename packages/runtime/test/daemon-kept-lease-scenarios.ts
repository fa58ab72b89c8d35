/**
 * The scenarios of the daemon's kept-lease consumer loop
 * (daemon-kept-lease.test.ts), written against a runtime module passed in,
 * so that daemon-kept-lease-mutants.test.ts runs the same steps against
 * deliberately broken runtimes and sees them fail.
 */
import type { Backend } from '@agent-state/core'
import type * as runtime from '../src/index.js'
import type { BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { claimEventually, sleep } from './queue-helpers.js'

/** The runtime's public module (the real one, or one with a mutated part). */
export type Runtime = typeof runtime

/** `inner` with every call counted by method name (methods run on `inner`). */
function counting(inner: Backend): { backend: Backend; calls: Map<string, number> } {
  const calls = new Map<string, number>()
  return { backend: counted(inner, calls, ''), calls }
}

/** `inner`'s method calls counted in `calls` as `prefix` + name; the native queue's as `nativeQueue.<name>`. */
function counted<T extends object>(inner: T, calls: Map<string, number>, prefix: string): T {
  return new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (property === 'nativeQueue' && typeof value === 'object' && value !== null) {
        return counted(value, calls, 'nativeQueue.')
      }
      if (typeof value !== 'function' || typeof property !== 'string') return value
      return (...args: unknown[]) => {
        calls.set(prefix + property, (calls.get(prefix + property) ?? 0) + 1)
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
}

/** The calls counted since `before` was taken, by method, without zeros. */
function since(calls: Map<string, number>, before: Map<string, number>): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [name, count] of calls) {
    const delta = count - (before.get(name) ?? 0)
    if (delta > 0) out[name] = delta
  }
  return out
}

/**
 * The daemon's loop over `events` events (triggered in one batch): `next()`,
 * then `ack` (with a state update when `withUpdate`), until `next()`
 * resolves `null`. Returns what was handed out, the fencing
 * tokens seen, and every backend call the loop made (the triggers not
 * counted), so the test can state the calls per event.
 */
export async function keptLeaseLoop(
  rt: Runtime,
  fixture: BackendFixture,
  withUpdate: boolean,
  events = 8,
) {
  const { backend, calls } = counting(fixture.create())
  const daemon = await rt.spawnDaemon(backend, {
    daemonId: `loop-${withUpdate}-${events}`,
    leaseTtlMs: 60_000,
    visibilityTimeoutMs: 20_000,
    state: { done: 0 },
  })
  await daemon.triggerMany(Array.from({ length: events }, (_, n) => ({ n })))
  const before = new Map(calls)
  const seen: unknown[] = []
  const tokens = new Set<number>()
  for (;;) {
    const turn = await daemon.next()
    if (turn === null) break
    seen.push([turn.seq, turn.event, turn.attempt])
    tokens.add(turn.token)
    if (withUpdate) await daemon.ack(turn, { state: { done: turn.seq + 1 } })
    else await daemon.ack(turn)
  }
  const loopCalls = since(calls, before)
  const snapshot = await rt.daemonSnapshot(backend, `loop-${withUpdate}-${events}`)
  return {
    seen,
    tokens: tokens.size,
    calls: loopCalls,
    total: Object.values(loopCalls).reduce((sum, n) => sum + n, 0),
    state: daemon.state,
    snapshot: {
      daemonState: snapshot.daemonState,
      totalIterations: snapshot.totalIterations,
      queued: snapshot.queuedEventCount,
    },
  }
}

/** What a `next()` came to: `[seq, attempt]`, `null`, or the error code. */
async function handedOut(next: Promise<runtime.Delivery | null>) {
  try {
    const delivery = await next
    return delivery === null ? null : [delivery.seq, delivery.attempt]
  } catch (error) {
    return codeOf(Promise.reject(error))
  }
}

/**
 * A stale kept delivery, fenced by its token, not by the holder name. The
 * daemon (holder `same`, visibility timeout 300 ms) acknowledges event 0,
 * which keeps the lease with event 1 claimed; it idles past the visibility
 * timeout; a plain consumer under the same holder name then claims event 1
 * (a newer token). The daemon's `next()` must not hand out its kept delivery
 * (the event is another consumer's now): `DELIVERY_IN_FLIGHT`, nothing
 * claimed. Once that consumer acknowledged event 1, the daemon gets event 2
 * on its first attempt. With `heartbeatFirst`, `daemon.heartbeat()` comes
 * before that `next()`: it renews the kept delivery, which is refused, so it
 * drops it and resolves (the daemon itself was not taken over).
 */
const VISIBILITY_MS = 1500

export async function staleKeptSameHolder(
  rt: Runtime,
  fixture: BackendFixture,
  heartbeatFirst = false,
) {
  const id = heartbeatFirst ? 'stale-kept-beat' : 'stale-kept'
  const daemon = await rt.spawnDaemon(fixture.create(), {
    daemonId: id,
    holder: 'same',
    leaseTtlMs: 60_000,
    // Long enough for next() then ack() under a loaded CI host (300 ms expired between them
    // once at load 40, and the ack failed): the scenario needs only the kept delivery to lapse.
    visibilityTimeoutMs: VISIBILITY_MS,
  })
  await daemon.triggerMany([{ n: 0 }, { n: 1 }, { n: 2 }])
  const first = await daemon.next()
  if (first === null) throw new Error('queue empty')
  await daemon.ack(first)
  await sleep(VISIBILITY_MS + 300)
  const other = await rt.openDaemonQueue(fixture.create(), id)
  const taken = await claimEventually(other, { holder: 'same', visibilityTimeoutMs: 20_000 })
  const newerToken = taken.token > first.token && taken.holder === first.holder
  // The heartbeat renews the kept delivery: refused, it drops it (not a takeover of the daemon).
  const heartbeat = heartbeatFirst ? await codeOf(daemon.heartbeat()) : 'not called'
  const staleNext = await handedOut(daemon.next())
  await taken.ack()
  // A code, not a throw: a broken runtime that handed out the stale delivery must still report.
  const after = await handedOut(daemon.next())
  return { newerToken, taken: [taken.seq, taken.attempt], heartbeat, staleNext, after }
}

/**
 * A stop between `ack` and `next()`: the event the ack claimed on the kept
 * lease was never handed out, so it goes back first and uncounted. After
 * `resumeDaemon`, `next()` hands out event 1 on its first attempt; the
 * snapshot taken between the ack and the stop shows it in flight, and the
 * one after the stop shows nothing in flight.
 */
export async function stopWithKept(rt: Runtime, fixture: BackendFixture) {
  const backend = fixture.create()
  const daemon = await rt.spawnDaemon(backend, {
    daemonId: 'stop-kept',
    leaseTtlMs: 60_000,
    visibilityTimeoutMs: 20_000,
  })
  await daemon.triggerMany([{ n: 0 }, { n: 1 }])
  const first = await daemon.next()
  if (first === null) throw new Error('queue empty')
  await daemon.ack(first, { state: { done: 1 } })
  const between = (await rt.daemonSnapshot(backend, 'stop-kept')).inflightEvent
  await daemon.stop('test')
  const stopped = (await rt.daemonSnapshot(backend, 'stop-kept')).inflightEvent
  const resumed = await rt.resumeDaemon(fixture.create(), 'stop-kept')
  const turn = await resumed.next()
  return {
    between: between === null ? null : [between.seq, between.attempt],
    stopped,
    resumed: turn === null ? null : [turn.seq, turn.event, turn.attempt],
    state: resumed.state,
  }
}

/**
 * `Daemon.triggerMany`: a batch that fits is numbered in order, one that
 * does not fit under the capacity (3) is `QUEUE_FULL` with nothing stored,
 * and the daemon then takes the stored events in order.
 */
export async function daemonTriggerMany(rt: Runtime, fixture: BackendFixture) {
  const daemon = await rt.spawnDaemon(fixture.create(), { daemonId: 'batch', capacity: 3 })
  const seqs = await daemon.triggerMany([{ n: 0 }, { n: 1 }])
  const full = await codeOf(daemon.triggerMany([{ n: 2 }, { n: 3 }]))
  const queued = (await daemon.queue.counts()).queuedCount
  const taken: unknown[] = []
  for (let turn = await daemon.next(); turn !== null; turn = await daemon.next()) {
    taken.push(turn.event)
    await daemon.ack(turn)
  }
  return { seqs, full, queued, taken }
}

/**
 * A takeover while the daemon holds a kept delivery: daemon `a` (worker
 * lease 1500 ms, so its spawn, trigger, claim and ack fit in it on a loaded
 * host; visibility timeout 20 s) acknowledges event 0, which keeps
 * the lease with event 1 claimed, and idles past its worker lease; `b`
 * recovers the daemon. `a`'s `next()` is `LEASE_LOST` and gives the kept
 * event back uncounted, so `b`'s `next()` gets it at once (no wait for the
 * visibility timeout) on its first attempt.
 */
export async function takeoverWithKept(rt: Runtime, fixture: BackendFixture) {
  const idle = await rt.spawnDaemon(fixture.create(), {
    daemonId: 'taken-kept',
    holder: 'a',
    leaseTtlMs: 1500,
    visibilityTimeoutMs: 20_000,
  })
  await idle.triggerMany([{ n: 0 }, { n: 1 }])
  const first = await idle.next()
  if (first === null) throw new Error('queue empty')
  await idle.ack(first)
  await sleep(1700)
  const owner = await rt.resumeDaemon(fixture.create(), 'taken-kept', {
    holder: 'b',
    recoverRunning: true,
  })
  const refused = await handedOut(idle.next())
  const taken = await handedOut(owner.next())
  return { refused, taken }
}
