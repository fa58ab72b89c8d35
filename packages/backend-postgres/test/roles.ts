import {
  type PgBouncer,
  type PostgresServer,
  startPgBouncer,
  startPostgresServer,
} from '@agent-state/test-services'
import { afterAll } from 'vitest'

/** The application role of the tests: owns only its schema (the grants the README documents). */
export const APP_ROLE = 'agent_state_app'
/** Its password: every character a URL or a log line could mangle. */
export const APP_PASSWORD = `s3cr3t p@ss:/?#%&="'\\`

const literal = (text: string) => `'${text.replaceAll("'", "''")}'`

/**
 * Creates the role and the schema it owns, exactly as the README's
 * "Roles and grants" section says: LOGIN, CONNECT on the database, no
 * CREATE on the database, its three timeouts as role settings (for
 * PgBouncer, where startup parameters are refused).
 */
export async function createAppRole(server: PostgresServer, schema = 'agent_state'): Promise<void> {
  await server.sql(
    `CREATE ROLE ${APP_ROLE} LOGIN PASSWORD ${literal(APP_PASSWORD)};
     REVOKE CREATE ON DATABASE postgres FROM PUBLIC;
     REVOKE CREATE ON SCHEMA public FROM PUBLIC;
     GRANT CONNECT ON DATABASE postgres TO ${APP_ROLE};
     CREATE SCHEMA ${schema} AUTHORIZATION ${APP_ROLE};
     ALTER ROLE ${APP_ROLE} SET statement_timeout = '5s';
     ALTER ROLE ${APP_ROLE} SET lock_timeout = '1s';
     ALTER ROLE ${APP_ROLE} SET idle_in_transaction_session_timeout = '5s';`,
  )
}

/**
 * A private PostgreSQL with the application role, behind a PgBouncer in
 * transaction-pooling mode of `poolSize` server connections, both stopped
 * after the calling test file. Call it at a test file's top level.
 */
export async function startAppBehindPgBouncer(
  poolSize: number,
): Promise<{ server: PostgresServer; bouncer: PgBouncer }> {
  const server = await startPostgresServer()
  await createAppRole(server)
  const bouncer = await startPgBouncer(server, { users: { [APP_ROLE]: APP_PASSWORD }, poolSize })
  afterAll(async () => {
    await bouncer.stop()
    await server.stop()
  })
  return { server, bouncer }
}
