import { type ChildProcess, spawn } from 'node:child_process'
import { chownSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { freePort } from './free-port.js'
import {
  asServiceUser,
  ensurePostgresInstalled,
  type PostgresServer,
  serviceIds,
  serviceTempDir,
} from './postgres-server.js'
import { startWatchdog, stopWatchdog } from './watchdog.js'

const PGBOUNCER = '/usr/sbin/pgbouncer'

/** Options of {@link startPgBouncer}. */
export interface PgBouncerOptions {
  /** Logins PgBouncer accepts and passes on to the server: user to password. */
  readonly users: Readonly<Record<string, string>>
  /** Server connections per (database, user). Default 20. */
  readonly poolSize?: number
}

/** A private PgBouncer in transaction-pooling mode in front of a {@link PostgresServer}. */
export interface PgBouncer {
  readonly host: string
  readonly port: number
  /** Its temp directory: `pgbouncer.ini`, the userlist, the log. */
  readonly dir: string
  /** A URL for `user` on `database` through PgBouncer. */
  urlFor(user: string, password: string, database?: string, query?: string): string
  stop(): Promise<void>
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Starts Debian's PgBouncer (as the service user when root, like the
 * server) on 127.0.0.1 and a free port, `pool_mode = transaction`: each
 * transaction may run on another server connection, so any session state a
 * client sets (SET, named prepared statements, session advisory locks,
 * LISTEN) would leak or vanish. Logins are scram-sha-256 against a userlist
 * holding the plain passwords, which PgBouncer also uses to log in to the
 * server. A watchdog kills it if this process dies.
 */
export async function startPgBouncer(
  server: PostgresServer,
  options: PgBouncerOptions,
): Promise<PgBouncer> {
  ensurePostgresInstalled()
  const ids = serviceIds()
  const dir = serviceTempDir('agent-state-pgbouncer-', ids)
  const port = await freePort()
  const quote = (text: string) => `"${text.replaceAll('"', '""')}"`
  const userlist = join(dir, 'userlist.txt')
  writeFileSync(
    userlist,
    Object.entries(options.users)
      .map(([user, password]) => `${quote(user)} ${quote(password)}\n`)
      .join(''),
    { mode: 0o600 },
  )
  const config = join(dir, 'pgbouncer.ini')
  writeFileSync(
    config,
    `[databases]
* = host=127.0.0.1 port=${server.port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = ${userlist}
pool_mode = transaction
default_pool_size = ${options.poolSize ?? 20}
max_client_conn = 2000
server_reset_query =
ignore_startup_parameters = extra_float_digits
logfile = ${join(dir, 'pgbouncer.log')}
pidfile =
`,
    { mode: 0o600 },
  )
  if (ids !== undefined) {
    chownSync(userlist, ids.uid, ids.gid)
    chownSync(config, ids.uid, ids.gid)
  }
  const [command, argv] = asServiceUser(ids, PGBOUNCER, [config])
  const proc: ChildProcess = spawn(command, argv, { stdio: 'ignore' })
  process.once('exit', () => proc.kill('SIGKILL'))
  const watchdog = startWatchdog(dir, [{ pid: proc.pid, comm: 'pgbouncer' }])
  const deadline = Date.now() + 15_000
  while (!(await listening(port))) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill('SIGKILL')
      stopWatchdog(watchdog)
      rmSync(dir, { recursive: true, force: true })
      throw new Error(`pgbouncer on port ${port} did not start (exit ${proc.exitCode})`)
    }
    await sleep(50)
  }
  return {
    host: '127.0.0.1',
    port,
    dir,
    urlFor: (user, password, database = 'postgres', query = '') =>
      `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}${query === '' ? '' : `?${query}`}`,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill('SIGINT')
        await new Promise((resolve) => proc.once('exit', resolve))
      }
      stopWatchdog(watchdog)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
