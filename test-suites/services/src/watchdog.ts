import { type ChildProcess, spawn } from 'node:child_process'

/**
 * A server started through a wrapper that execs it (`setpriv`): its PID and
 * the program name `/proc/<pid>/comm` must show, since the spawned file's
 * name is the wrapper's.
 */
export interface WatchedProcess {
  readonly pid: number | undefined
  readonly comm: string
}

/**
 * Starts a detached shell that outlives a crashed or SIGKILLed test process:
 * once this process is gone it SIGKILLs the given server processes (after
 * checking each PID still runs the expected program, so a reused PID is never
 * hit) and wipes `dir`. The 'exit' hooks of the launchers cover normal exits;
 * this covers the rest (a vitest worker killed on timeout, `timeout`, Ctrl-C).
 * Kill the returned process once the servers are stopped.
 */
export function startWatchdog(
  dir: string,
  servers: readonly (ChildProcess | WatchedProcess)[],
): ChildProcess {
  const checks = servers
    .map((server) =>
      'comm' in server
        ? server
        : { pid: server.pid, comm: String(server.spawnfile).split('/').pop() ?? '' },
    )
    .filter((server): server is { pid: number; comm: string } => server.pid !== undefined)
    .map(({ pid, comm }) => {
      return `[ "$(cat /proc/${pid}/comm 2>/dev/null)" = "${comm.slice(0, 15)}" ] && kill -9 ${pid}`
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
