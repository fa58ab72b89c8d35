/**
 * The checks of wake-dispatcher.test.ts run against deliberately broken
 * dispatchers: each mutant must make its check see the failure it exists to
 * catch. Each mutant replaces one module (vi.doMock) and imports the runtime
 * afresh.
 */

import type { Backend, Lease, WriterIdentity } from '@agent-state/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { WakeRecord } from '../src/index.js'
import { wakeBucketPrefix } from '../src/shared/layout.js'
import type * as WakeIndex from '../src/wake/wake-index.js'
import { mutated, unmockAll } from './mutants.js'
import {
  cancelledNeverFires,
  frozenMidFire,
  handlerFailure,
  lateStart,
  raceTwoDispatchers,
  WAKE_BACKENDS,
} from './wake-scenarios.js'

const FIRING = '../src/wake/wake-firing.ts'
const INDEX = '../src/wake/wake-index.ts'
const encoder = new TextEncoder()

afterEach(unmockAll)

/**
 * Mutant: no lease taken (a made-up one is returned) and every write a plain
 * put, without `ifMatch` and without the lease. (Either one alone keeps the
 * frozen dispatcher out: the stale lease is `LEASE_LOST`, the stale version
 * `PRECONDITION_FAILED`; docs/runtime/wakes.md.)
 */
const noLeaseNoCondition = (original: Record<string, unknown>) => ({
  ...original,
  writeUnderLease: async (
    backend: Backend,
    key: string,
    next: WakeRecord,
    _readVersion: string,
    _lease: Lease,
    writer: WriterIdentity,
  ) => (await backend.put(key, encoder.encode(JSON.stringify(next)), { writer })).version,
  takeWake: async (
    _backend: Backend,
    key: string,
    holder: string,
    ttlMs: number,
  ): Promise<Lease> => ({
    key,
    holder,
    token: 1,
    ttlMs,
    expiresAt: Number.MAX_SAFE_INTEGER,
  }),
})

describe.each(WAKE_BACKENDS)('wake mutants on $name', (kind) => {
  it('firing without the lease and the conditional write: the race check sees wakes handled twice', async () => {
    const outcome = await raceTwoDispatchers(await mutated(FIRING, noLeaseNoCondition), kind)
    // wake-dispatcher.test.ts expects handledTwice to be [].
    expect(outcome.handledTwice.length).toBeGreaterThan(0)
  })

  it('firing without the lease and the conditional write: the frozen dispatcher records its firing after the takeover', async () => {
    const outcome = await frozenMidFire(await mutated(FIRING, noLeaseNoCondition), kind)
    // wake-dispatcher.test.ts expects 'lost', ['b'], 'dispatcher-b'.
    expect(outcome).toMatchObject({
      frozenOutcome: 'fired',
      handledBy: ['b', 'a'],
      firedBy: 'dispatcher-a',
    })
  })

  it('scanning only the first page of a bucket: the late-start check sees a due wake left for later', async () => {
    const rt = await mutated(INDEX, (original) => ({
      ...original,
      dueMarkers: async function* (
        backend: Backend,
        bucket: string,
        now: number,
        pageSize: number,
      ) {
        const prefix = wakeBucketPrefix(bucket)
        const page = await backend.list({ prefix, limit: pageSize })
        for (const entry of page.entries) {
          const wakeId = entry.key.slice(prefix.length)
          if (Number(wakeId.slice(0, 13)) > now) return
          yield { wakeId, key: entry.key }
        }
      },
    }))
    const outcome = await lateStart(rt, kind)
    // wake-dispatcher.test.ts expects wakes 0 to 4 on the first tick.
    expect(outcome.firstTick.map(([index]) => index)).toEqual([0, 1, 3, 4])
  })

  it("listing only now's bucket: the late-start check sees the late wakes never fire", async () => {
    const rt = await mutated(INDEX, (original) => ({
      ...original,
      dueBuckets: async function* (backend: Backend, now: number) {
        for await (const bucket of (original.dueBuckets as typeof WakeIndex.dueBuckets)(
          backend,
          now,
        )) {
          if (Number(bucket) + 60_000 > now) yield bucket
        }
      },
    }))
    const outcome = await lateStart(rt, kind)
    expect(outcome.firstTick).toEqual([])
  })

  it('dropping a fired wake whose handler failed: the redelivery check sees it never delivered', async () => {
    const rt = await mutated(FIRING, (original) => ({
      ...original,
      nextStep: (record: WakeRecord) => (record.state === 'pending' ? 'fire' : 'archive'),
    }))
    const outcome = await handlerFailure(rt, kind)
    // wake-dispatcher.test.ts expects 'redelivered', 2 calls, delivered.
    expect(outcome).toMatchObject({
      outcomes: ['handler-failed', 'busy', 'archived'],
      calls: 1,
      delivered: false,
    })
  })

  it('handing out cancelled wakes: the cancel check sees the cancelled wake handled', async () => {
    const rt = await mutated(FIRING, (original) => ({
      ...original,
      nextStep: (record: WakeRecord) =>
        record.state === 'cancelled'
          ? 'fire'
          : (original.nextStep as (r: WakeRecord) => string)(record),
    }))
    const outcome = await cancelledNeverFires(rt, kind)
    // wake-dispatcher.test.ts expects handled [2].
    expect(outcome.handled).toEqual([1, 2])
  })
})
