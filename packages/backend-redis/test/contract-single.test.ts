import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll } from 'vitest'
import { openRedisBackend } from '../src/index.js'

// A missing or broken redis-server fails here, loudly: never a skip.
const server = await startRedisServer()
afterAll(() => server.stop())

describeBackendContract({
  name: 'redis',
  create: (ctx) =>
    openRedisBackend({
      port: server.port,
      namespace: ctx.namespace,
      maxValueBytes: 1 << 20,
    }),
  // The change-notification tier's resync check: kill the watch's subscriber connection.
  watchInterrupt: async () => {
    await redisCli(server.port, ['CLIENT', 'KILL', 'TYPE', 'pubsub'])
  },
  process: {
    module: fileURLToPath(new URL('./child-factory.ts', import.meta.url)),
    options: { port: server.port },
  },
})
