import { readFileSync } from 'node:fs'

/**
 * CPU seconds (user + system) process `pid` has used, with those of its children it has
 * reaped (a PostgreSQL server's ended sessions), read from `/proc/<pid>/stat`; `undefined`
 * when the process is gone or `/proc` is not Linux's.
 */
export function cpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command name, which may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 after the name.
    const ticks = [11, 12, 13, 14].reduce((sum, at) => sum + Number(fields[at]), 0)
    return Number.isFinite(ticks) ? ticks / 100 : undefined
  } catch {
    return undefined
  }
}

/**
 * CPU seconds of process `pid` (its reaped children included) and of its live
 * children: a PostgreSQL server's postmaster and its sessions, for the
 * benchmarks' server CPU per operation. `NaN` without a pid.
 */
export function treeCpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN
  let children: string[] = []
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/)
  } catch {
    // no children file: the process alone (its reaped children included)
  }
  return children
    .filter((child) => child !== '')
    .reduce((sum, child) => sum + (cpuSeconds(Number(child)) ?? 0), cpuSeconds(pid) ?? 0)
}

/**
 * Prints one line saying how much CPU a test server used, just before it stops: on a 2-core
 * CI machine the servers compete with the tests, and this is where the CI budget's time goes
 * when it is not in the test processes themselves.
 */
export function reportCpu(
  server: string,
  processes: ReadonlyArray<{ readonly name: string; readonly pid: number | undefined }>,
  startedAt: number,
): void {
  const parts = processes.flatMap(({ name, pid }) => {
    const seconds = cpuSeconds(pid)
    return seconds === undefined ? [] : [`${name} ${seconds.toFixed(1)} s`]
  })
  if (parts.length === 0) return
  const wall = ((Date.now() - startedAt) / 1000).toFixed(0)
  process.stderr.write(`[test-services] ${server} CPU over ${wall} s: ${parts.join(', ')}\n`)
}
