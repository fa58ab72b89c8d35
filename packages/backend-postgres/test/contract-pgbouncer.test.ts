import { describeBackendContract } from '@agent-state/contract'
import { startPgBouncer, startPostgresServer } from '@agent-state/test-services'
import { afterAll } from 'vitest'
import { createBackendFromUrl } from '../src/index.js'
import { APP_PASSWORD, APP_ROLE, createAppRole } from './roles.js'

// The whole contract again, through a real PgBouncer in transaction-pooling
// mode, as a role that owns only its schema: any session state the backend
// relied on (SET, named prepared statements, session advisory locks) would
// land on another server connection and fail here.
const server = await startPostgresServer()
await createAppRole(server)
const bouncer = await startPgBouncer(server, { users: { [APP_ROLE]: APP_PASSWORD }, poolSize: 8 })
afterAll(async () => {
  await bouncer.stop()
  await server.stop()
})

const url = bouncer.urlFor(APP_ROLE, APP_PASSWORD, 'postgres', 'startupTimeouts=false')

describeBackendContract({
  name: 'postgres-pgbouncer',
  create: (ctx) =>
    createBackendFromUrl(url, {
      namespace: ctx.namespace,
      maxValueBytes: 16 * 1024 * 1024,
      poolSize: 4,
    }),
  process: {
    module: new URL('./child-factory.ts', import.meta.url).pathname,
    options: {
      connectionString: url.replace('?startupTimeouts=false', ''),
      startupTimeouts: false,
      maxValueBytes: 16 * 1024 * 1024,
      poolSize: 2,
    },
    writeSteps: ['before-write'],
  },
})
