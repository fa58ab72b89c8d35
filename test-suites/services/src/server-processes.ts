import type { ChildProcess } from 'node:child_process'

/** Every server process the services started in this process and that is still running. */
const running = new Set<ChildProcess>()
let exitHookInstalled = false

/**
 * Kills `child` with SIGKILL if it is still running when this process exits,
 * so a test run that ends (or throws) never leaves a server behind. Covers a
 * clean exit only: a test process killed outright leaves its servers to the
 * watchdog (watchdog.ts). 'exit' handlers must be synchronous, so SIGKILL is
 * all there is time for.
 */
export function killOnExit(child: ChildProcess): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.on('exit', () => {
      for (const server of running) server.kill('SIGKILL')
    })
  }
  running.add(child)
  child.once('exit', () => running.delete(child))
}
