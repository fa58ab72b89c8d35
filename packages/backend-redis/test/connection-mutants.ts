import type { Backend } from '@agent-state/core'
import type { Redis } from 'ioredis'
import { vi } from 'vitest'
import type * as ConnectionPoolModule from '../src/connection-pool.js'
import type * as BackendModule from '../src/index.js'
import type * as SharedWaitModule from '../src/shared-wait.js'
import { failureOf, sleep } from './replica-pair.js'

type Plan = ReturnType<typeof ConnectionPoolModule.connectionPlan>
type SharedWaitFactory = typeof SharedWaitModule.createSharedWait

/**
 * The backend module with `createSharedWait` replaced by what `mutate` makes
 * of it. The caller undoes it after the test: `vi.doUnmock('../src/shared-wait.js')`
 * and `vi.resetModules()`.
 */
export async function withSharedWaitMutant(
  mutate: (original: SharedWaitFactory) => SharedWaitFactory,
): Promise<typeof BackendModule> {
  vi.resetModules()
  vi.doMock('../src/shared-wait.js', async (importOriginal) => {
    const original = await importOriginal<typeof SharedWaitModule>()
    return { ...original, createSharedWait: mutate(original.createSharedWait) }
  })
  return import('../src/index.js')
}

/** Mutant: one WAIT per write, sent right after its script (correct, but nothing shared). */
export const waitPerWrite = (): SharedWaitFactory => (client: Redis, replication) => ({
  afterWrite: () => client.wait(replication.replicas, replication.timeoutMs).then(Number, () => 0),
  state: () => ({ phase: 'idle', sentAt: 0 }),
})

/**
 * The backend module with `connectionPlan` (which connections a backend
 * opens) replaced by what `mutate` makes of its answer. The caller undoes it
 * after the test: `vi.doUnmock('../src/connection-pool.js')` and
 * `vi.resetModules()`.
 */
export async function withPlanMutant(mutate: (plan: Plan) => Plan): Promise<typeof BackendModule> {
  vi.resetModules()
  vi.doMock('../src/connection-pool.js', async (importOriginal) => {
    const original = await importOriginal<typeof ConnectionPoolModule>()
    return {
      ...original,
      connectionPlan: (topology: ConnectionPoolModule.ConnectionTopology) =>
        mutate(original.connectionPlan(topology)),
    }
  })
  return import('../src/index.js')
}

/**
 * On `b`, whose every `WAIT` blocks its connection for the whole timeout
 * (more replicas required than exist, `timeoutMs` 2 s): starts a put of `key`,
 * and 100 ms later (its `WAIT` in flight) a read. Returns the read's time in
 * ms (`undefined` if it took over 1 s, half the block) and how the put
 * settled.
 */
export async function readBesideBlockedWrite(
  b: Backend,
  key: string,
): Promise<{ readMs: number | undefined; write: Promise<{ code: string; context: unknown }> }> {
  const write = failureOf(b.put(key, new TextEncoder().encode(key)))
  await sleep(100)
  const readStart = performance.now()
  const read = b.get(`${key}-other`).then(() => performance.now() - readStart)
  const readMs = await Promise.race([read, sleep(1000).then(() => undefined)])
  await read
  return { readMs, write }
}
