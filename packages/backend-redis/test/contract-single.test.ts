import { fileURLToPath } from 'node:url'
import { describeBackendContract } from '@agent-state/contract'
import { MAX_LEASE_TTL_MS } from '@agent-state/core'
import { startRedisServer } from '@agent-state/test-services'
import { afterAll } from 'vitest'
import { openRedisBackend } from '../src/index.js'

// A missing or broken redis-server fails here, loudly: never a skip.
// maxLeaseTtlMs: core's 24 h, because the contract's property check takes 1 h leases (the default is 5 min).
const server = await startRedisServer()
afterAll(() => server.stop())

describeBackendContract({
  name: 'redis',
  create: (ctx) =>
    openRedisBackend({
      port: server.port,
      namespace: ctx.namespace,
      maxValueBytes: 1 << 20,
      maxLeaseTtlMs: MAX_LEASE_TTL_MS,
    }),
  process: {
    module: fileURLToPath(new URL('./child-factory.ts', import.meta.url)),
    options: { port: server.port, maxLeaseTtlMs: MAX_LEASE_TTL_MS },
  },
})
