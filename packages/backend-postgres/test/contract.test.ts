import { describeBackendContract } from '@agent-state/contract'
import { startPostgresServer } from '@agent-state/test-services'
import { afterAll } from 'vitest'
import { openPostgresBackend } from '../src/index.js'

// A real PostgreSQL 15 started for this file; a missing server fails here, loudly: never a skip.
const server = await startPostgresServer()
afterAll(() => server.stop())

describeBackendContract({
  name: 'postgres',
  // 16 MiB (not the 64 MiB default) so the suite can also test VALUE_TOO_LARGE.
  create: (ctx) =>
    openPostgresBackend({
      connectionString: server.url,
      namespace: ctx.namespace,
      maxValueBytes: 16 * 1024 * 1024,
      poolSize: 4,
    }),
  process: {
    module: new URL('./child-factory.ts', import.meta.url).pathname,
    options: { connectionString: server.url, maxValueBytes: 16 * 1024 * 1024, poolSize: 2 },
    writeSteps: ['before-write'],
  },
})
