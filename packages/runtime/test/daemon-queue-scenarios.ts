/**
 * The scenarios of the queue's batching and lease-keeping checks
 * (daemon-queue-batching.test.ts), written against a runtime module passed
 * in, so that daemon-queue-mutants.test.ts runs the same steps against
 * deliberately broken runtimes and sees them fail.
 */
import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import type * as runtime from '../src/index.js'
import { daemonEventKey, daemonHeadKey, daemonTailKey } from '../src/internal.js'
import type { BackendFixture } from './backends.js'
import { codeOf } from './error-code.js'
import { claimEventually, sleep } from './queue-helpers.js'
import type { createOnPath } from './queue-paths.js'

/** The runtime's public module (the real one, or one with a mutated part). */
export type Runtime = typeof runtime

/** `inner` with its lease acquisitions and releases counted (methods run on `inner`). */
function countingLeases(inner: Backend): { backend: Backend; calls: Record<string, number> } {
  const calls: Record<string, number> = { acquireLease: 0, releaseLease: 0 }
  const backend = new Proxy(inner, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver)
      if (typeof value !== 'function' || typeof property !== 'string') return value
      return (...args: unknown[]) => {
        if (property in calls) calls[property] = (calls[property] ?? 0) + 1
        return (value as (...a: unknown[]) => unknown).apply(target, args)
      }
    },
  })
  return { backend, calls }
}

/**
 * A batch that does not fit under the capacity, then one that does, then the
 * queue drained. The real queue refuses the first with `QUEUE_FULL`, the tail
 * record untouched and 2 events queued; stores the second as [2, 3, 4]; and
 * delivers all five in order.
 */
export async function triggerManyAllOrNothing(rt: Runtime, fixture: BackendFixture) {
  const backend = fixture.create()
  const queue = await rt.createDaemonQueue(backend, 'batch', { capacity: 5 })
  await queue.triggerMany([{ n: 0 }, { n: 1 }])
  const tailBefore = (await backend.get(daemonTailKey('batch')))?.meta.version
  const full = await codeOf(queue.triggerMany([{ n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]))
  const tailUnchanged = (await backend.get(daemonTailKey('batch')))?.meta.version === tailBefore
  const queuedAfterFull = (await queue.counts()).queuedCount
  // A code, not a throw: a broken runtime that filled the queue above must still report.
  const seqs = await queue
    .triggerMany([{ n: 2 }, { n: 3 }, { n: 4 }])
    .catch((error: unknown) => (isAgentStateError(error) ? error.code : Promise.reject(error)))
  const delivered: unknown[] = []
  for (;;) {
    const delivery = await queue.claim({ holder: 'drain' })
    if (delivery === null) break
    delivered.push([delivery.seq, delivery.event, delivery.attempt])
    await delivery.ack()
  }
  return { full, tailUnchanged, queuedAfterFull, seqs, delivered }
}

/**
 * Batches the queue must refuse whole: an empty one stores nothing, one with
 * a bad event is `INVALID_EVENT`, one with an oversized event or more than
 * `MAX_BATCH_EVENTS` events is `EVENT_TOO_LARGE`, and none of them stores
 * anything (no sequence number used, no write made).
 */
export async function batchInputRefused(rt: Runtime, fixture: BackendFixture) {
  const queue = await rt.createDaemonQueue(fixture.create(), 'bad-batch', { maxEventBytes: 64 })
  const tooMany = Array.from({ length: rt.MAX_BATCH_EVENTS + 1 }, (_, i) => i)
  const outcome = {
    empty: await queue.triggerMany([]),
    badEvent: await codeOf(queue.triggerMany([{ ok: 1 }, () => 1])),
    notArray: await codeOf(queue.triggerMany('nope' as unknown as unknown[])),
    oversizedEvent: await codeOf(queue.triggerMany([1, 'x'.repeat(63)])),
    tooMany: await codeOf(queue.triggerMany(tooMany)),
  }
  return { ...outcome, next: (await queue.counts()).next, stats: queue.producerStats() }
}

/**
 * 16 overlapping `trigger` calls on one handle. The real queue stores them in
 * at most two writes of the tail record (the first call alone, the other 15
 * combined), losing no compare-and-set round, numbered in call order.
 */
export async function overlappingTriggers(rt: Runtime, fixture: BackendFixture) {
  const queue = await rt.createDaemonQueue(fixture.create(), 'combined')
  const seqs = await Promise.all(Array.from({ length: 16 }, (_, i) => queue.trigger({ i })))
  const delivered: unknown[] = []
  for (;;) {
    const delivery = await queue.claim()
    if (delivery === null) break
    delivered.push(delivery.event)
    await delivery.ack()
  }
  return { seqs, stats: queue.producerStats(), delivered }
}

/**
 * A consumer that acknowledges each event with `ackAndClaim` through five
 * events. The real queue takes the delivery lease once and releases it once
 * (when the queue runs empty), hands out every event on its first attempt in
 * order under one token, and refuses the chain's earlier deliveries as stale.
 */
export async function keptLeaseChain(rt: Runtime, fixture: BackendFixture) {
  const { backend, calls } = countingLeases(fixture.create())
  const queue = await rt.createDaemonQueue(backend, 'chain')
  await queue.triggerMany([0, 1, 2, 3, 4].map((n) => ({ n })))
  const first = await queue.claim({ holder: 'chain' })
  if (first === null) throw new Error('queue empty')
  const seen: unknown[] = []
  const tokens = new Set<number>()
  let current: runtime.Delivery | null = first
  let previous: runtime.Delivery | null = null
  while (current !== null) {
    seen.push([current.seq, current.event, current.attempt])
    tokens.add(current.token)
    previous = current
    current = await current.ackAndClaim()
  }
  const staleAck = await codeOf(first.ack())
  const staleChain = await codeOf(first.ackAndClaim())
  const lastAgain = previous === null ? null : await codeOf(previous.ack())
  return {
    seen,
    tokens: tokens.size,
    calls: { ...calls },
    staleAck,
    staleChain,
    lastAgain,
    counts: await queue.counts(),
  }
}

/**
 * Fencing of a kept lease, told apart from holder names. Consumer A claims
 * under holder `same` with a short visibility timeout and stalls past it;
 * consumer B, under the same holder name, is midway through its claim of the
 * same event: it holds the delivery lease (a newer token) and has not yet
 * written the head record, so the head record's version has not moved and
 * only the token can tell A's lease from B's. A's `ackAndClaim` and `ack`
 * must fail with `LEASE_LOST` and change nothing; B then gets the event on
 * its second attempt and goes on with a chain of its own.
 */
export async function staleTokenSameHolder(rt: Runtime, fixture: BackendFixture) {
  const queue = await rt.createDaemonQueue(fixture.create(), 'fenced')
  await queue.triggerMany([{ n: 0 }, { n: 1 }, { n: 2 }])
  // 1500 ms, not less: the claim's own fenced write must land inside it, and an S3 write on a
  // loaded CI host took over 400 ms (LEASE_LOST from the claim, as in daemon-queue.test.ts).
  const stale = await claimEventually(queue, { holder: 'same', visibilityTimeoutMs: 1500 })
  await sleep(1600)
  const contender = fixture.create()
  const headKey = daemonHeadKey('fenced')
  const taken = await acquireEventually(contender, headKey, 'same')
  const newerToken = taken.token > stale.token && taken.holder === stale.holder
  const versionBefore = (await contender.get(headKey))?.meta.version
  const staleChain = await codeOf(stale.ackAndClaim())
  const staleAck = await codeOf(stale.ack())
  const headUnchanged = (await contender.get(headKey))?.meta.version === versionBefore
  await contender.releaseLease(taken)
  const other = await rt.openDaemonQueue(contender, 'fenced')
  const fresh = await claimEventually(other, { holder: 'same', visibilityTimeoutMs: 20_000 })
  const next = await fresh.ackAndClaim()
  const outcome = {
    newerToken,
    staleChain,
    staleAck,
    headUnchanged,
    fresh: [fresh.seq, fresh.attempt],
    next: next === null ? null : [next.seq, next.attempt, next.token === fresh.token],
  }
  await next?.ack()
  return outcome
}

/** Takes `key`'s lease once the expired one may be taken over (later on an observer clock). */
async function acquireEventually(backend: Backend, key: string, holder: string): Promise<Lease> {
  const deadline = Date.now() + 20_000
  for (;;) {
    try {
      return await backend.acquireLease(key, { holder, ttlMs: 20_000 })
    } catch (error) {
      if (!isAgentStateError(error, 'LEASE_HELD') || Date.now() > deadline) throw error
    }
    await sleep(50)
  }
}

/** Creates a daemon queue on one path (see queue-paths.ts). */
export type CreateOnPath = ReturnType<typeof createOnPath>

/**
 * The exact capacity: a queue of capacity 2 holding 2 events refuses a third
 * and a batch that does not fit, storing nothing. The real queue answers
 * `QUEUE_FULL` twice with 2 events queued; a write that skips the check
 * stores them.
 */
export async function capacityExact(create: CreateOnPath, fixture: BackendFixture) {
  const queue = await create(fixture.create(), 'exact', { capacity: 2 })
  await queue.triggerMany([{ n: 0 }, { n: 1 }])
  const single = await codeOf(queue.trigger({ n: 2 }))
  const batch = await codeOf(queue.triggerMany([{ n: 3 }]))
  return { single, batch, queued: (await queue.counts()).queuedCount }
}

/**
 * The per-delivery fencing token: a claim, its release and a second claim of
 * the same event. The real queue gives the second a larger token (from the
 * head record's fencing counter, like every lease); a claim that does not
 * bump the counter hands out the same token twice.
 */
export async function tokenPerClaim(create: CreateOnPath, fixture: BackendFixture) {
  const queue = await create(fixture.create(), 'tokens')
  await queue.trigger({ n: 0 })
  const first = await claimEventually(queue, { holder: 'a' })
  await first.release()
  const second = await claimEventually(queue, { holder: 'a' })
  await second.ack()
  return { first: first.token, second: second.token, attempts: [first.attempt, second.attempt] }
}

/** `key`'s record rewritten by `change` (its JSON text in, the new text out). */
async function rewrite(backend: Backend, key: string, change: (text: string) => string) {
  const found = await backend.get(key)
  if (found === null) throw new Error(`${key} missing`)
  await backend.put(key, new TextEncoder().encode(change(new TextDecoder().decode(found.value))))
}

/** A record's JSON with its fields in reverse order: the same record to any JSON reader. */
const reversed = (text: string) =>
  JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(text) as object).reverse()))

/**
 * Head, tail and event records whose fields are not in the order the runtime
 * writes them (another JSON writer): the same records, so the queue works on.
 * The real queue (the Redis scripts read the numbers from the usual start of
 * the JSON, and decode anything else) stores the third event ('resolved'), refuses the
 * fourth (`QUEUE_FULL`, capacity 3) and delivers 0, 1, 2 in order ('resolved').
 */
export async function anyFieldOrder(create: CreateOnPath, fixture: BackendFixture) {
  const backend = fixture.create()
  const queue = await create(backend, 'order', { capacity: 3 })
  await queue.triggerMany([{ n: 0 }, { n: 1 }])
  for (const key of [daemonHeadKey('order'), daemonTailKey('order'), daemonEventKey('order', 0)]) {
    await rewrite(backend, key, reversed)
  }
  const stored = await codeOf(queue.trigger({ n: 2 }))
  const full = await codeOf(queue.trigger({ n: 3 }))
  const seen: unknown[] = []
  const drained = await codeOf(
    (async () => {
      for (let delivery = await queue.claim(); delivery !== null; ) {
        seen.push(delivery.event)
        delivery = await delivery.ackAndClaim()
      }
    })(),
  )
  return { stored, full, seen, drained }
}

/**
 * Damaged records refused unchanged: a tail cut in the middle (its start
 * intact), then an event record of another sequence number at the head's
 * key. The real queue answers `QUEUE_CORRUPT` to the trigger and the claim
 * and leaves the tail as it was; then `QUEUE_CORRUPT` to the claim of the
 * misplaced event.
 */
export async function damagedRecordsRefused(create: CreateOnPath, fixture: BackendFixture) {
  const backend = fixture.create()
  const queue = await create(backend, 'cut', { capacity: 4 })
  await queue.triggerMany([{ n: 0 }, { n: 1 }])
  let cut = ''
  await rewrite(backend, daemonTailKey('cut'), (text) => {
    cut = text.slice(0, Math.floor(text.length / 2))
    return cut
  })
  const trigger = await codeOf(queue.trigger({ n: 2 }))
  const claim = await codeOf(queue.claim())
  const found = await backend.get(daemonTailKey('cut'))
  const tailUnchanged = found !== null && new TextDecoder().decode(found.value) === cut
  const queue2 = await create(backend, 'moved', { capacity: 4 })
  await queue2.triggerMany([{ n: 0 }, { n: 1 }])
  const one = await backend.get(daemonEventKey('moved', 1))
  if (one === null) throw new Error('event 1 missing')
  await backend.put(daemonEventKey('moved', 0), one.value)
  const misplaced = await codeOf(queue2.claim())
  return { trigger, claim, tailUnchanged, misplaced }
}

/** `inner` as a backend that lacks the `nativeQueue` capability (an older or wrapped client). */
export function withoutNativeQueue(inner: Backend): Backend {
  const { nativeQueue: _operations, capabilities, ...rest } = inner
  const { nativeQueue: _claimed, ...kept } = capabilities
  return { ...rest, capabilities: { ...kept, durable: capabilities.durable } }
}

/**
 * A backend that gains the capability (docs/runtime/daemons.md, "When a
 * backend gains or loses the capability"): a queue created generically
 * through `without` holds its latest write's events in `tail.json` only;
 * opened through `capable` it stays generic, so a trigger and a drain
 * deliver every event in order. A runtime that switched it to the native
 * path would lose those events (the native claim finds no record of them).
 */
export async function gainedCapability(
  rt: Pick<Runtime, 'createDaemonQueue' | 'openDaemonQueue'>,
  without: Backend,
  capable: Backend,
) {
  const queue = await rt.createDaemonQueue(without, 'gained', { path: 'auto', capacity: 4 })
  await queue.triggerMany([{ n: 0 }, { n: 1 }])
  const reopened = await rt.openDaemonQueue(capable, 'gained')
  const trigger = await codeOf(reopened.trigger({ n: 2 }))
  const seen: unknown[] = []
  const drained = await codeOf(
    (async () => {
      for (let delivery = await reopened.claim({ holder: 'h' }); delivery !== null; ) {
        seen.push(delivery.event)
        delivery = await delivery.ackAndClaim()
      }
    })(),
  )
  const { head, queuedCount, iterations } = await reopened.counts()
  return {
    paths: [queue.path, reopened.path],
    trigger,
    drained,
    seen,
    counts: { head, queuedCount, iterations },
  }
}
