import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll } from 'vitest'
import { openRedisBackend } from '../src/index.js'

// The whole contract with durable acknowledgement on: a primary and one replica, WAIT after every write.
const primary = await startRedisServer()
const replica = await startRedisServer({
  extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
})
afterAll(() => Promise.all([replica.stop(), primary.stop()]))
const deadline = Date.now() + 15_000
while (!(await redisCli(replica.port, ['INFO', 'replication'])).includes('master_link_status:up')) {
  if (Date.now() > deadline) throw new Error('the replica never linked')
  await new Promise((resolve) => setTimeout(resolve, 50))
}
const replication = { replicas: 1, timeoutMs: 2000 }

describeBackendContract({
  name: 'redis-replicated',
  // 20 crash cycles here (the suite's floor is 10): the single-node run keeps the default 50,
  // and these topologies share its scripts; AGENT_STATE_CRASH_CYCLES still overrides both.
  scale: { crashCycles: 20 },
  create: (ctx) =>
    openRedisBackend({
      port: primary.port,
      namespace: ctx.namespace,
      maxValueBytes: 1 << 20,
      replication,
    }),
  // The change-notification tier's resync check: kill the watch's subscriber connection.
  watchInterrupt: async () => {
    await redisCli(primary.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub'])
  },
  process: {
    module: fileURLToPath(new URL('./child-factory.ts', import.meta.url)),
    options: { port: primary.port, replication },
  },
})
