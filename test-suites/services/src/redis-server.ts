import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ensureDebianPackages } from './debian-packages.js'
import { freePort } from './free-port.js'
import { reportCpu } from './process-cpu.js'
import { killOnExit } from './server-processes.js'
import { startWatchdog, stopWatchdog } from './watchdog.js'

/** Options of {@link startRedisServer}. */
export interface RedisServerOptions {
  /**
   * `appendfsync` policy: `always` makes every acknowledged write durable
   * before the reply; `everysec` (default) may lose up to about a second on an
   * OS crash (not on a process kill: the data is already written to the file).
   */
  readonly appendfsync?: 'always' | 'everysec' | 'no'
  /** Sets `requirepass`, so clients must authenticate (user `default`). */
  readonly password?: string
  /** Extra `redis-server` arguments, e.g. `['--cluster-enabled', 'yes']`. */
  readonly extraArgs?: readonly string[]
  /** Milliseconds to wait for PING to answer. Default 15 000. */
  readonly startTimeoutMs?: number
  /**
   * Whole seconds the server's wall clock (`TIME`, and so every script's
   * clock) runs ahead of the host's (negative: behind), through libfaketime
   * (Debian `libfaketime`, installed when missing). Its monotonic clock is
   * left alone (timers, replication timeouts). Default: the host's clock.
   */
  readonly clockOffsetSeconds?: number
}

/** How {@link RedisServer.restart} stops the process. */
export interface RestartOptions {
  /** `SIGKILL` simulates a crash; `SIGTERM` (default) is a clean shutdown. */
  readonly signal?: 'SIGTERM' | 'SIGKILL'
  /** Milliseconds to stay down before starting again. Default 0. */
  readonly downMs?: number
}

/** A private `redis-server` on 127.0.0.1. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>` (no credentials). */
  readonly url: string
  readonly host: string
  readonly port: number
  /** The server's working directory (AOF files live here). */
  readonly dir: string
  /** The current process id, or `undefined` while stopped. */
  readonly pid: number | undefined
  /** Stops the server process by its PID, waits for exit, removes its directory. */
  stop(): Promise<void>
  /** Stops the process and starts it again on the same port and directory. */
  restart(options?: RestartOptions): Promise<void>
}

const REDIS_SERVER = '/usr/bin/redis-server'
const REDIS_CLI = '/usr/bin/redis-cli'

/** Installs redis-server/redis-cli from Debian when missing (fails loudly otherwise). */
export function ensureRedisInstalled(): void {
  ensureDebianPackages([REDIS_SERVER, REDIS_CLI], ['redis-server'])
}

/** Runs `redis-cli` against a port; resolves its stdout. */
export function redisCli(
  port: number,
  args: readonly string[],
  options: { password?: string; timeoutMs?: number } = {},
): Promise<string> {
  const env = { ...process.env }
  if (options.password !== undefined) env.REDISCLI_AUTH = options.password
  return new Promise((resolve, reject) => {
    execFile(
      REDIS_CLI,
      ['-h', '127.0.0.1', '-p', String(port), ...args],
      { env, timeout: options.timeoutMs ?? 10_000 },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    )
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until `redis-cli PING` answers PONG, or throws after `timeoutMs`. */
export async function waitForPing(
  port: number,
  timeoutMs: number,
  password?: string,
  child?: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child !== undefined && child.exitCode !== null) {
      throw new Error(`redis-server on port ${port} exited with code ${child.exitCode}`)
    }
    try {
      const out = await redisCli(
        port,
        ['PING'],
        password === undefined ? { timeoutMs: 2000 } : { password, timeoutMs: 2000 },
      )
      if (out.trim() === 'PONG') return
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING`)
    await sleep(50)
  }
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return new Promise((resolve) => child.once('exit', () => resolve()))
}

const LIBFAKETIME = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1'
/**
 * glibc's malloc, as a preloadable library. Debian's redis-server allocates with jemalloc, whose
 * start-up calls clock_gettime before libfaketime can answer it (libfaketime issue 130: the
 * server never starts); preloaded first, glibc's allocator serves malloc instead.
 */
const GLIBC_MALLOC = '/lib/x86_64-linux-gnu/libc_malloc_debug.so.0'

/** The server's environment: the host's, or libfaketime's with the clock offset. */
function clockEnvironment(offsetSeconds: number | undefined): NodeJS.ProcessEnv {
  if (offsetSeconds === undefined) return process.env
  if (!Number.isSafeInteger(offsetSeconds)) {
    throw new Error(`clockOffsetSeconds must be whole seconds (got ${offsetSeconds})`)
  }
  ensureDebianPackages([LIBFAKETIME], ['libfaketime'])
  return {
    ...process.env,
    LD_PRELOAD: `${GLIBC_MALLOC}:${LIBFAKETIME}`,
    FAKETIME: `${offsetSeconds >= 0 ? '+' : ''}${offsetSeconds}`,
    FAKETIME_DONT_FAKE_MONOTONIC: '1',
  }
}

/**
 * Starts a private `redis-server` (Debian's, installed on demand) on
 * 127.0.0.1 and a free port, in a fresh temp directory, in the foreground as
 * a child of this process (never daemonized), with `--save ''`,
 * `--appendonly yes`, `--appendfsync everysec` and `--repl-diskless-sync-delay 0`
 * unless told otherwise.
 * Resolves once PING answers. The process is killed when the test process exits.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  ensureRedisInstalled()
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-redis-'))
  const timeoutMs = options.startTimeoutMs ?? 15_000
  let child: ChildProcess | undefined
  let watchdog: ChildProcess | undefined
  let port = 0

  const args = (): string[] => {
    const list = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--daemonize',
      'no',
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      options.appendfsync ?? 'everysec',
      '--logfile',
      join(dir, 'redis.log'),
      // A primary otherwise waits 5 s before it syncs a new replica (Redis 7.0's
      // default, to batch replicas that connect together); tests start their
      // replicas one by one, so the wait is pure idle time (~100 s per suite).
      '--repl-diskless-sync-delay',
      '0',
    ]
    if (options.password !== undefined) list.push('--requirepass', options.password)
    return [...list, ...(options.extraArgs ?? [])]
  }

  const env = clockEnvironment(options.clockOffsetSeconds)
  let launchedAt = Date.now()
  const launch = async (): Promise<void> => {
    const proc = spawn(REDIS_SERVER, args(), { cwd: dir, stdio: 'ignore', env })
    killOnExit(proc)
    child = proc
    launchedAt = Date.now()
    stopWatchdog(watchdog)
    watchdog = startWatchdog(dir, [proc])
    await waitForPing(port, timeoutMs, options.password, proc)
  }

  // The port may be taken between freePort() and the bind: retry with another.
  for (let attempt = 1; ; attempt++) {
    port = await freePort()
    try {
      await launch()
      break
    } catch (error) {
      child?.kill('SIGKILL')
      if (attempt >= 3) {
        stopWatchdog(watchdog)
        rmSync(dir, { recursive: true, force: true })
        throw error
      }
    }
  }

  const stopProcess = async (signal: 'SIGTERM' | 'SIGKILL'): Promise<void> => {
    const proc = child
    child = undefined
    if (proc === undefined) return
    proc.kill(signal)
    await waitForExit(proc)
  }

  return {
    url: `redis://127.0.0.1:${port}`,
    host: '127.0.0.1',
    port,
    dir,
    get pid() {
      return child?.pid
    },
    async stop() {
      reportCpu('redis-server', [{ name: 'redis-server', pid: child?.pid }], launchedAt)
      await stopProcess('SIGTERM')
      stopWatchdog(watchdog)
      rmSync(dir, { recursive: true, force: true })
    },
    async restart(restartOptions: RestartOptions = {}) {
      await stopProcess(restartOptions.signal ?? 'SIGTERM')
      if (restartOptions.downMs !== undefined) await sleep(restartOptions.downMs)
      await launch()
    },
  }
}
