import { type Backend, createManualClock, isAgentStateError } from '@agent-state/core'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint'
import { describe, expect, it } from 'vitest'
import { createCheckpointSaver } from '../src/index.js'
import { allKeys, putChain } from './helpers.js'

/**
 * The owned put on a backend that claims `crossKeyFence`: one record write,
 * fenced by the thread's lease, with no head commit. A stale owner's write
 * must then be refused by the backend itself, since nothing after it would
 * hide the record.
 */

const TTL_MS = 1000

/** A memory backend that keeps the claim but writes a fenced put unfenced (the mutant). */
function fenceDropped(backend: Backend): Backend {
  return new Proxy(backend, {
    get(target, property, receiver) {
      if (property === 'put') {
        return (key: string, value: Uint8Array, options?: Parameters<Backend['put']>[2]) => {
          const { fence: _fence, ...rest } = options ?? {}
          return target.put(key, value, rest)
        }
      }
      const value = Reflect.get(target, property, receiver)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

/**
 * Owner `a` writes, its lease expires on the backend's clock (while `a`'s own
 * monotonic clock still calls it live), `b` takes the thread over, then `a`
 * puts once more. Resolves `a`'s error code (or `'resolved'`) and the keys.
 */
async function staleOwnerPut(wrap: (backend: Backend) => Backend) {
  const clock = createManualClock()
  const store = createMemoryStore()
  const backendOf = () => createMemoryBackend({ store, clock: clock.now })
  const a = createCheckpointSaver({
    backend: wrap(backendOf()),
    ownership: { holder: 'a', ttlMs: TTL_MS },
  })
  const b = createCheckpointSaver({
    backend: backendOf(),
    ownership: { holder: 'b', ttlMs: TTL_MS },
  })
  const [first] = await putChain(a, 't', 1)
  clock.advance(TTL_MS)
  const [taken] = await putChain(b, 't', 1, { from: first as never })
  const before = await allKeys(backendOf(), '')
  let outcome = 'resolved'
  try {
    await a.put(
      first as never,
      { ...emptyCheckpoint(), id: uuid6(-3) },
      { source: 'loop', step: 9, parents: {} },
      {},
    )
  } catch (error) {
    outcome = isAgentStateError(error) ? error.code : String(error)
  }
  const after = await allKeys(backendOf(), '')
  const latest = await b.getTuple({ configurable: { thread_id: 't' } })
  return { outcome, before, after, latest: latest?.checkpoint.id, taken }
}

describe('the owned put on a crossKeyFence backend', () => {
  it('is refused LEASE_LOST after a takeover, storing nothing; the new owner keeps the thread', async () => {
    const run = await staleOwnerPut((backend) => backend)
    expect(run.outcome).toBe('LEASE_LOST')
    expect(run.after).toEqual(run.before)
    expect(run.latest).toBe(run.taken?.configurable?.checkpoint_id)
  })

  it('mutant: with the fence dropped, the stale owner forks the thread', async () => {
    const run = await staleOwnerPut(fenceDropped)
    expect(run.outcome).toBe('resolved')
    expect(run.after.length).toBeGreaterThan(run.before.length)
  })
})
