import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort } from './free-port.js'
import { ensureRedisInstalled, waitForPing } from './redis-server.js'
import { killOnExit } from './server-processes.js'
import { startWatchdog, stopWatchdog } from './watchdog.js'

/** Options of {@link startRedisSentinel}. */
export interface RedisSentinelOptions {
  /** The master group name. Default `mymaster`. */
  readonly name?: string
  /** The primary to monitor (127.0.0.1). */
  readonly primaryPort: number
  /** `down-after-milliseconds`: how long the primary may not answer before failover. Default 1000. */
  readonly downAfterMs?: number
  /** `failover-timeout`. Default 5000. */
  readonly failoverTimeoutMs?: number
}

/** A private Sentinel on 127.0.0.1 (quorum 1). */
export interface RedisSentinel {
  readonly host: string
  readonly port: number
  readonly name: string
  /** Stops the process by its PID, waits for exit, removes its directory. */
  stop(): Promise<void>
}

/**
 * Starts `redis-server --sentinel` (Debian's redis-server package) on a free
 * port, monitoring one primary with quorum 1, from a config file in a fresh
 * temp directory (Sentinel rewrites it). Resolves once PING answers; the
 * process is killed when the test process exits.
 */
export async function startRedisSentinel(options: RedisSentinelOptions): Promise<RedisSentinel> {
  ensureRedisInstalled()
  const name = options.name ?? 'mymaster'
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-sentinel-'))
  const port = await freePort()
  const config = join(dir, 'sentinel.conf')
  writeFileSync(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `logfile ${join(dir, 'sentinel.log')}`,
      `sentinel monitor ${name} 127.0.0.1 ${options.primaryPort} 1`,
      `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
      `sentinel failover-timeout ${name} ${options.failoverTimeoutMs ?? 5000}`,
      '',
    ].join('\n'),
    { mode: 0o600 },
  )
  const child = spawn('/usr/bin/redis-server', [config, '--sentinel'], {
    cwd: dir,
    stdio: 'ignore',
  })
  killOnExit(child)
  const watchdog = startWatchdog(dir, [child])
  try {
    await waitForPing(port, 15_000, undefined, child)
  } catch (error) {
    child.kill('SIGKILL')
    stopWatchdog(watchdog)
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    host: '127.0.0.1',
    port,
    name,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      stopWatchdog(watchdog)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
