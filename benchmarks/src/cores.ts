import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'

/**
 * How a benchmark shares the host's cores with its server (`BENCH_PG_CORES`):
 * - `shared` (the default): client and server run on any core, as on a
 *   developer's laptop. At high concurrency both keep every core busy, so a
 *   client that spends more CPU per operation takes it from the server, and a
 *   ratio of latencies is a ratio of client and server CPU together.
 * - `split`: the server (the postmaster, its processes and every session it
 *   forks later) on the last core, this process on the others: the database
 *   on a machine of its own, as in a deployment, where the client's CPU does
 *   not slow the server.
 */
export type CoreLayout = 'shared' | 'split'

/** The layout `BENCH_PG_CORES` asks for; anything else is refused. */
export function coreLayout(): CoreLayout {
  const asked = process.env.BENCH_PG_CORES ?? 'shared'
  if (asked === 'shared' || asked === 'split') return asked
  throw new Error(`BENCH_PG_CORES must be shared or split, not ${JSON.stringify(asked)}`)
}

/**
 * Applies `layout` to the server whose postmaster is `serverPid` and to this
 * process (every thread of each, with `taskset` from util-linux); returns a
 * line for the report. `split` needs at least two cores. `tree` finds the
 * server's processes (a test passes a mutant that misses its children).
 */
export function applyCoreLayout(
  layout: CoreLayout,
  serverPid: number | undefined,
  tree: (pid: number) => number[] = processTree,
): string {
  if (layout === 'shared') return 'client and server on any core'
  const count = cpus().length
  if (count < 2) throw new Error('BENCH_PG_CORES=split needs at least two cores')
  if (serverPid === undefined) throw new Error('BENCH_PG_CORES=split needs the server’s pid')
  const serverCore = String(count - 1)
  const clientCores = count === 2 ? '0' : `0-${count - 2}`
  // Sessions forked later inherit the postmaster's affinity.
  for (const pid of tree(serverPid)) pin(pid, serverCore)
  pin(process.pid, clientCores)
  return `server on core ${serverCore}, client on core${count === 2 ? '' : 's'} ${clientCores}`
}

function pin(pid: number, cores: string): void {
  execFileSync('taskset', ['--all-tasks', '--cpu-list', '--pid', cores, String(pid)], {
    stdio: 'ignore',
  })
}

/** `pid` and its descendants, from `/proc/<pid>/task/<pid>/children`. */
export function processTree(pid: number): number[] {
  let children: number[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8')
      .trim()
      .split(/\s+/)
      .filter((child) => child !== '')
      .map(Number)
  } catch {
    // gone, or no children file: the process alone
  }
  return [pid, ...children.flatMap(processTree)]
}
