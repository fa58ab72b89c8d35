import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { redisCli, startRedisCluster } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { createRedisBackend, openRedisBackend, redisKeyLayout } from '../src/index.js'

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

  it('replication: the script and WAIT run as one pipeline on the slot owner', async () => {
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
})
