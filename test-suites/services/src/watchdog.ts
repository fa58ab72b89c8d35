import { type ChildProcess, spawn } from 'node:child_process'

/**
 * Starts a detached shell that outlives a crashed or SIGKILLed test process:
 * once this process is gone it SIGKILLs the given server processes (after
 * checking each PID still runs the expected program, so a reused PID is never
 * hit) and wipes `dir`. The 'exit' hooks of the launchers cover normal exits;
 * this covers the rest (a vitest worker killed on timeout, `timeout`, Ctrl-C).
 * Kill the returned process once the servers are stopped.
 */
export function startWatchdog(dir: string, servers: readonly ChildProcess[]): ChildProcess {
  const checks = servers
    .filter((child) => child.pid !== undefined)
    .map((child) => {
      const comm = (String(child.spawnfile).split('/').pop() ?? '').slice(0, 15)
      return `[ "$(cat /proc/${child.pid}/comm 2>/dev/null)" = "${comm}" ] && kill -9 ${child.pid}`
    })
  const script = `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ${[...checks, `rm -rf '${dir}'`].join('; ')}`
  const watchdog = spawn('/bin/sh', ['-c', script], { detached: true, stdio: 'ignore' })
  watchdog.unref()
  return watchdog
}

/** Stops a watchdog from {@link startWatchdog} (the servers it guarded are gone). */
export function stopWatchdog(watchdog: ChildProcess | undefined): void {
  if (watchdog?.pid !== undefined && watchdog.exitCode === null) watchdog.kill('SIGKILL')
}
