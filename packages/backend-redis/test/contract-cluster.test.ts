import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { redisCli, startRedisCluster } from '@agent-state/test-services'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { createRedisBackend, openRedisBackend, redisKeyLayout } from '../src/index.js'
import { keySlot as computedSlot } from '../src/key-slot.js'
import {
  readBesideBlockedWrite,
  waitPerWrite,
  withPlanMutant,
  withSharedWaitMutant,
} from './connection-mutants.js'
import { failureOf } from './replica-pair.js'

// Three masters, no replicas: every namespace's keys hash to one slot of one of them.
const cluster = await startRedisCluster({ masters: 3 })
afterAll(() => cluster.stop())
const nodes = cluster.nodes.map((node) => ({ host: node.host, port: node.port }))

describeBackendContract({
  name: 'redis-cluster',
  // 20 crash cycles here (the suite's floor is 10): the single-node run keeps the default 50,
  // and these topologies share its scripts; AGENT_STATE_CRASH_CYCLES still overrides both.
  scale: { crashCycles: 20 },
  create: (ctx) =>
    openRedisBackend({
      cluster: { nodes },
      namespace: ctx.namespace,
      maxValueBytes: 1 << 20,
    }),
  // The change-notification tier's resync check: kill the watch's subscriber connection.
  // Kills the subscriber connections on every master (the watch's is on its slot's owner).
  watchInterrupt: async () => {
    for (const node of nodes) await redisCli(node.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub'])
  },
  process: {
    module: fileURLToPath(new URL('./child-factory.ts', import.meta.url)),
    options: { cluster: { nodes } },
  },
})

describe('redis cluster specifics', () => {
  const bytes = (text: string) => new TextEncoder().encode(text)
  const firstPort = nodes[0]?.port as number

  async function keySlot(key: string): Promise<number> {
    return Number((await redisCli(firstPort, ['CLUSTER', 'KEYSLOT', key])).trim())
  }

  async function keysEverywhere(pattern: string): Promise<string[]> {
    const found: string[] = []
    for (const node of nodes) {
      const out = await redisCli(node.port, ['--scan', '--pattern', pattern])
      found.push(...out.split('\n').filter((line) => line.length > 0))
    }
    return found
  }

  it('keeps every key of a namespace in one slot, whatever braces the user key holds', async () => {
    const layout = redisKeyLayout('as', 'slots')
    const indexSlot = await keySlot(layout.index)
    expect(indexSlot).toBeGreaterThanOrEqual(0)
    for (const key of ['{other}/x', 'a}{b', 'plain', '{}']) {
      expect(await keySlot(layout.record(key))).toBe(indexSlot)
    }
    expect(await keySlot(layout.records)).toBe(indexSlot)
    // The promotion hold's record too: it lives on the node that serves the namespace.
    expect(await keySlot(layout.meta)).toBe(indexSlot)
    const b = createRedisBackend({ cluster: { nodes }, namespace: 'slots' })
    try {
      await b.put('{other}/x', bytes('1'))
      await b.put('a}{b', bytes('2'))
      expect((await b.list()).entries.map((e) => e.key)).toEqual(['a}{b', '{other}/x'])
    } finally {
      await b.destroy?.()
      await b.close()
    }
  })

  it('spreads namespaces over the masters, and destroy leaves nothing on any node', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `spread-${i}`)
    const slots = await Promise.all(names.map((n) => keySlot(redisKeyLayout('as', n).index)))
    // 12 namespaces over 16384 slots split 3 ways: they do not all land on one master.
    const owners = new Set(slots.map((slot) => Math.floor(slot / 5462)))
    expect(owners.size).toBeGreaterThan(1)
    const backends = names.map((namespace) => createRedisBackend({ cluster: { nodes }, namespace }))
    try {
      for (const b of backends) {
        await b.put('k', bytes('v'))
        await b.acquireLease('l', { holder: 'h', ttlMs: 60_000 })
      }
      // Per namespace: the value's hash, the index, the records set and the meta hash (`mt`).
      expect((await keysEverywhere('as:{ns:spread-*')).length).toBe(names.length * 5)
      for (const b of backends) await b.destroy?.()
      expect(await keysEverywhere('as:{ns:spread-*')).toEqual([])
    } finally {
      await Promise.all(backends.map((b) => b.close()))
    }
  })

  it("replication: the script and its WAIT run on the slot owner's connection", async () => {
    // This cluster has no replicas: WAIT 1 on the node that ran the put confirms 0.
    const b = createRedisBackend({
      cluster: { nodes },
      namespace: 'cluster-wait',
      replication: { replicas: 1, timeoutMs: 50 },
    })
    try {
      let caught: unknown
      try {
        await b.put('k', bytes('v'))
      } catch (error) {
        caught = error
      }
      expect(caught).toMatchObject({ code: 'INDETERMINATE', context: { acked: 0, required: 1 } })
      // The put itself ran on the owner of the namespace's slot.
      expect((await b.get('k'))?.value).toEqual(bytes('v'))
    } finally {
      await b.close()
    }
  })

  /** With replication (and no replicas: WAIT 1 blocks the node connection 2 s), a read beside a write. */
  async function readBesideWrite(create: typeof createRedisBackend, namespace: string) {
    const b = create({
      cluster: { nodes },
      namespace,
      replication: { replicas: 1, timeoutMs: 2000 },
    })
    try {
      const { readMs, write } = await readBesideBlockedWrite(b, 'k')
      expect(await write).toMatchObject({
        code: 'INDETERMINATE',
        context: { acked: 0, required: 1 },
      })
      return readMs
    } finally {
      await b.close()
    }
  }

  it('replication: reads go on a second Cluster client, never behind a WAIT', async () => {
    expect(await readBesideWrite(createRedisBackend, 'cluster-apart')).toBeDefined()
  }, 30_000)

  it('mutant (reads on the write client) fails that check', async () => {
    try {
      const mutant = await withPlanMutant((plan) => ({ ...plan, readsApart: false }))
      expect(
        await readBesideWrite(mutant.createRedisBackend, 'cluster-apart-mutant'),
      ).toBeUndefined()
    } finally {
      vi.doUnmock('../src/connection-pool.js')
      vi.resetModules()
    }
  }, 30_000)

  /** `WAIT` commands all masters ran so far. */
  async function waitCalls(): Promise<number> {
    let total = 0
    for (const node of nodes) {
      const info = await redisCli(node.port, ['INFO', 'commandstats'])
      total += Number(/cmdstat_wait:calls=(\d+)/.exec(info)?.[1] ?? '0')
    }
    return total
  }

  /** 16 workers, 3 puts each, under replication (no replicas: each WAIT waits 20 ms): the WAITs run. */
  async function waitsAtSixteen(create: typeof createRedisBackend, namespace: string) {
    const b = create({ cluster: { nodes }, namespace, replication: { replicas: 1, timeoutMs: 20 } })
    try {
      await failureOf(b.put('warm', bytes('w')))
      const before = await waitCalls()
      const outcomes = await Promise.all(
        Array.from({ length: 16 }, async (_, worker) => {
          const codes: string[] = []
          for (let i = 0; i < 3; i++) {
            codes.push((await failureOf(b.put(`w${worker}`, bytes('v')))).code)
          }
          return codes
        }),
      )
      // Each write is still judged by its own WAIT: none of them is confirmed.
      expect(new Set(outcomes.flat())).toEqual(new Set(['INDETERMINATE']))
      return (await waitCalls()) - before
    } finally {
      await b.close()
    }
  }

  it('replication: 16 concurrent writers share WAITs on the slot owner (one per write before)', async () => {
    const waits = await waitsAtSixteen(createRedisBackend, 'cluster-shared')
    expect(waits).toBeGreaterThan(0)
    expect(waits).toBeLessThanOrEqual((16 * 3) / 4)
  }, 30_000)

  it('mutant (a WAIT per write) fails the count', async () => {
    try {
      const mutant = await withSharedWaitMutant(waitPerWrite)
      expect(
        await waitsAtSixteen(mutant.createRedisBackend, 'cluster-shared-mutant'),
      ).toBeGreaterThan((16 * 3) / 4)
    } finally {
      vi.doUnmock('../src/shared-wait.js')
      vi.resetModules()
    }
  }, 30_000)

  it('keySlot is the slot CLUSTER KEYSLOT gives (tagged, untagged, empty tag, non-ASCII)', async () => {
    const layout = redisKeyLayout('as', 'slot-check')
    for (const key of [layout.record('k'), layout.index, 'plain', 'a{}b', '{x}y{z}', 'ü{é}', '{']) {
      expect(computedSlot(key)).toBe(await keySlot(key))
    }
  })
})
