import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureDebianPackages } from './debian-packages.js'
import { freePort } from './free-port.js'
import { reportCpu } from './process-cpu.js'
import { killOnExit } from './server-processes.js'
import { startWatchdog, stopWatchdog } from './watchdog.js'

/** Where Debian's PostgreSQL 15 server binaries live (not on PATH). */
export const POSTGRES_BIN = '/usr/lib/postgresql/15/bin'
const PSQL = '/usr/bin/psql'
const PGBOUNCER = '/usr/sbin/pgbouncer'
/**
 * The unprivileged system user the servers run as when the tests run as
 * root: `initdb`, `postgres` and `pgbouncer` refuse to run as root.
 */
export const SERVICE_USER = 'agent-state-pg'

/** Superuser of the test cluster. */
export const POSTGRES_SUPERUSER = 'agent_state_admin'

/** Options of {@link startPostgresServer}. */
export interface PostgresServerOptions {
  /** Extra `-c name=value` server settings. */
  readonly settings?: Readonly<Record<string, string>>
  /** Milliseconds to wait for the server to accept connections. Default 60 000. */
  readonly startTimeoutMs?: number
}

/** How {@link PostgresServer.restart} stops the server. */
export interface PostgresRestartOptions {
  /**
   * `fast` (SIGINT, default): rolls back open transactions, ends sessions,
   * checkpoints. `immediate` (SIGQUIT): quits without a checkpoint, like a
   * crash; the next start replays the WAL.
   */
  readonly mode?: 'fast' | 'immediate'
  /** Milliseconds to stay down before starting again. Default 0. */
  readonly downMs?: number
}

/** A private PostgreSQL 15 cluster on 127.0.0.1. */
export interface PostgresServer {
  /** `postgres://agent_state_admin:<password>@127.0.0.1:<port>/postgres`: credentials included. */
  readonly url: string
  readonly host: string
  readonly port: number
  /** The superuser's password (scram-sha-256 over TCP). */
  readonly password: string
  /** Directory of the unix socket (trust authentication for local connections). */
  readonly socketDir: string
  /** The temp directory holding the data directory and the socket (owned by the service user). */
  readonly dir: string
  /** The postmaster's process id, or `undefined` while stopped. */
  readonly pid: number | undefined
  /** Runs SQL as the superuser through the unix socket with `psql`; resolves its unaligned output. */
  sql(statement: string, database?: string): Promise<string>
  /** A URL for `user`/`password` on `database` (percent-encoded). */
  urlFor(user: string, password: string, database?: string, query?: string): string
  /** Stops the server (fast shutdown), waits for exit, removes its directory. */
  stop(): Promise<void>
  /** Stops the server and starts it again on the same port and data directory. */
  restart(options?: PostgresRestartOptions): Promise<void>
}

/** Installs PostgreSQL 15 and PgBouncer from Debian when missing (fails loudly otherwise). */
export function ensurePostgresInstalled(): void {
  ensureDebianPackages(
    [join(POSTGRES_BIN, 'initdb'), join(POSTGRES_BIN, 'postgres'), PSQL, PGBOUNCER],
    ['postgresql', 'pgbouncer'],
  )
}

/** Whether this process runs as root, where the servers need {@link SERVICE_USER}. */
function asRoot(): boolean {
  return process.getuid?.() === 0
}

/**
 * The uid and gid the servers run as: {@link SERVICE_USER}, created as a
 * system user without home or shell when missing (root only); the current
 * user when not root.
 */
export function serviceIds(): { uid: number; gid: number } | undefined {
  if (!asRoot()) return undefined
  const idOf = (flag: string): number =>
    Number(
      execFileSync('id', [flag, SERVICE_USER], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      }).trim(),
    )
  try {
    return { uid: idOf('-u'), gid: idOf('-g') }
  } catch {
    try {
      execFileSync(
        'useradd',
        [
          '--system',
          '--user-group',
          '--no-create-home',
          '--shell',
          '/usr/sbin/nologin',
          SERVICE_USER,
        ],
        { stdio: 'ignore' },
      )
    } catch {
      // Another test process may have created it meanwhile: checked just below.
    }
    return { uid: idOf('-u'), gid: idOf('-g') }
  }
}

/**
 * `command` as the service user: through `setpriv` (which execs, so the
 * child's PID is the server's own and signals reach it directly).
 */
export function asServiceUser(
  ids: { uid: number; gid: number } | undefined,
  command: string,
  args: readonly string[],
): [string, string[]] {
  if (ids === undefined) return [command, [...args]]
  return [
    'setpriv',
    [`--reuid=${ids.uid}`, `--regid=${ids.gid}`, '--clear-groups', '--', command, ...args],
  ]
}

/** A temp directory owned by the service user, mode 0700. */
export function serviceTempDir(
  prefix: string,
  ids: { uid: number; gid: number } | undefined,
): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  chmodSync(dir, 0o700)
  if (ids !== undefined) chownSync(dir, ids.uid, ids.gid)
  return dir
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function run(command: string, args: readonly string[], timeoutMs = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [...args],
      { timeout: timeoutMs, encoding: 'utf8' },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`${command} failed: ${stderr || error.message}`))
          : resolve(stdout),
    )
  })
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

/**
 * Starts a private PostgreSQL 15 (Debian's, installed on demand): `initdb`
 * into a fresh temp directory owned by the service user, then `postgres` in
 * the foreground as a child of this process on 127.0.0.1 and a free port,
 * its unix socket in the temp directory. TCP logins use scram-sha-256 with
 * a generated superuser password; the socket trusts local users (the tests'
 * `psql`). `client_connection_check_interval=1s` makes a backend whose
 * client was killed in the middle of a statement notice it and roll back.
 * A watchdog kills the server and wipes the directory if this process dies.
 */
export async function startPostgresServer(
  options: PostgresServerOptions = {},
): Promise<PostgresServer> {
  ensurePostgresInstalled()
  const ids = serviceIds()
  const dir = serviceTempDir('agent-state-pg-', ids)
  const data = join(dir, 'data')
  const socketDir = join(dir, 'socket')
  const password = `pw-${Math.random().toString(36).slice(2)}:@/?#%`
  const pwfile = join(dir, 'pwfile')
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 })
  mkdirSync(socketDir, { mode: 0o755 })
  if (ids !== undefined) {
    chownSync(pwfile, ids.uid, ids.gid)
    chownSync(socketDir, ids.uid, ids.gid)
  }
  const timeoutMs = options.startTimeoutMs ?? 60_000
  await run(
    ...asServiceUser(ids, join(POSTGRES_BIN, 'initdb'), [
      '-D',
      data,
      '-U',
      POSTGRES_SUPERUSER,
      `--pwfile=${pwfile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C',
      '--no-sync',
    ]),
  )
  rmSync(pwfile)
  let child: ChildProcess | undefined
  let watchdog: ChildProcess | undefined
  let port = 0

  const settings: Record<string, string> = {
    listen_addresses: '127.0.0.1',
    max_connections: '300',
    shared_buffers: '32MB',
    client_connection_check_interval: '1s',
    logging_collector: 'off',
    ...options.settings,
  }

  const sql = (statement: string, database = 'postgres'): Promise<string> =>
    run(PSQL, [
      '-X',
      '-q',
      '-A',
      '-t',
      '-v',
      'ON_ERROR_STOP=1',
      '-h',
      socketDir,
      '-p',
      String(port),
      '-U',
      POSTGRES_SUPERUSER,
      '-d',
      database,
      '-c',
      statement,
    ])

  const waitReady = async (proc: ChildProcess): Promise<void> => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`postgres on port ${port} exited (${proc.exitCode ?? proc.signalCode})`)
      }
      try {
        if ((await sql('SELECT 1')).trim() === '1') return
      } catch {
        // not up yet
      }
      if (Date.now() > deadline) throw new Error(`postgres on port ${port} did not start`)
      await sleep(100)
    }
  }

  let launchedAt = Date.now()
  const launch = async (): Promise<void> => {
    const args = ['-D', data, '-p', String(port), '-k', socketDir]
    for (const [name, value] of Object.entries(settings)) args.push('-c', `${name}=${value}`)
    const [command, argv] = asServiceUser(ids, join(POSTGRES_BIN, 'postgres'), args)
    const proc = spawn(command, argv, { stdio: 'ignore' })
    killOnExit(proc)
    child = proc
    launchedAt = Date.now()
    stopWatchdog(watchdog)
    watchdog = startWatchdog(dir, [{ pid: proc.pid, comm: 'postgres' }])
    await waitReady(proc)
  }

  for (let attempt = 1; ; attempt++) {
    port = await freePort()
    try {
      await launch()
      break
    } catch (error) {
      child?.kill('SIGKILL')
      if (child !== undefined) await waitForExit(child)
      if (attempt >= 3) {
        stopWatchdog(watchdog)
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
    }
  }

  const stopProcess = async (signal: NodeJS.Signals): Promise<void> => {
    const proc = child
    child = undefined
    if (proc === undefined) return
    proc.kill(signal)
    await waitForExit(proc)
  }

  const urlFor = (user: string, pass: string, database = 'postgres', query = ''): string =>
    `postgres://${encodeURIComponent(user)}:${encodeURIComponent(pass)}@127.0.0.1:${port}/${encodeURIComponent(database)}${query === '' ? '' : `?${query}`}`

  return {
    get url() {
      return urlFor(POSTGRES_SUPERUSER, password)
    },
    host: '127.0.0.1',
    get port() {
      return port
    },
    password,
    socketDir,
    dir,
    get pid() {
      return child?.pid
    },
    sql,
    urlFor,
    async stop() {
      reportCpu('PostgreSQL', [{ name: 'postgres', pid: child?.pid }], launchedAt)
      await stopProcess('SIGINT')
      stopWatchdog(watchdog)
      rmSync(dir, { recursive: true, force: true })
    },
    async restart(restartOptions: PostgresRestartOptions = {}) {
      await stopProcess(restartOptions.mode === 'immediate' ? 'SIGQUIT' : 'SIGINT')
      if (restartOptions.downMs !== undefined) await sleep(restartOptions.downMs)
      await launch()
    },
  }
}
