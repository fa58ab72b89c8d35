import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { applyCoreLayout, coreLayout, processTree } from '../src/cores.js'
import { type PostgresResults, renderPostgresSection } from '../src/report/postgres.js'

/**
 * `BENCH_PG_CORES` (cores.ts) and the section of BENCHMARKS.md its split run
 * renders (report/postgres.ts). Nothing here is timed.
 */

describe('BENCH_PG_CORES', () => {
  const before = process.env.BENCH_PG_CORES
  afterEach(() => {
    if (before === undefined) delete process.env.BENCH_PG_CORES
    else process.env.BENCH_PG_CORES = before
  })

  it('is shared unless split is asked for, and refuses anything else by name', () => {
    delete process.env.BENCH_PG_CORES
    expect(coreLayout()).toBe('shared')
    process.env.BENCH_PG_CORES = 'split'
    expect(coreLayout()).toBe('split')
    process.env.BENCH_PG_CORES = 'half'
    expect(() => coreLayout()).toThrow('BENCH_PG_CORES must be shared or split, not "half"')
  })
})

/** The cores `pid` may run on, as /proc says (`Cpus_allowed_list`). */
function allowedCores(pid: number): string {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return /^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1] ?? '?'
}

describe('the split layout', () => {
  const children: ChildProcess[] = []
  afterEach(() => {
    // The stand-in's whole process group: its session too.
    for (const child of children.splice(0)) process.kill(-(child.pid as number), 'SIGKILL')
  })

  // A stand-in server: a shell (the postmaster) with a child of its own (a session), and a
  // separate node process in the role of the benchmark, since pinning this test's own
  // process would pin the test runner.
  async function pinnedFromAnotherProcess(mutant: boolean): Promise<{
    server: string
    session: string
    client: string
  }> {
    const server = spawn('sh', ['-c', 'sleep 60 & wait'], { stdio: 'ignore', detached: true })
    children.push(server)
    const serverPid = server.pid as number
    let tree: number[] = []
    for (let tries = 0; tree.length < 2 && tries < 100; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
      tree = processTree(serverPid)
    }
    const [, sessionPid] = tree
    const script = `
      const { applyCoreLayout } = await import(${JSON.stringify(join(import.meta.dirname, '..', 'src', 'cores.ts'))})
      applyCoreLayout('split', ${serverPid}${mutant ? ', (pid) => [pid]' : ''})
      const status = (await import('node:fs')).readFileSync('/proc/self/status', 'utf8')
      console.log(/^Cpus_allowed_list:\\s*(\\S+)$/m.exec(status)[1])`
    const client = execFileSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { encoding: 'utf8', cwd: join(import.meta.dirname, '..') },
    ).trim()
    return {
      server: allowedCores(serverPid),
      session: allowedCores(sessionPid as number),
      client,
    }
  }

  it('puts the server and its sessions on the last core and the benchmark on the others', async () => {
    if (cpus().length < 2) {
      expect(() => applyCoreLayout('split', process.pid)).toThrow(
        'BENCH_PG_CORES=split needs at least two cores',
      )
      return
    }
    const last = String(cpus().length - 1)
    const others = cpus().length === 2 ? '0' : `0-${cpus().length - 2}`
    expect(await pinnedFromAnotherProcess(false)).toEqual({
      server: last,
      session: last,
      client: others,
    })
    // Mutant: a tree that misses the postmaster's children leaves its sessions on any core.
    const all = `0-${cpus().length - 1}`
    expect(await pinnedFromAnotherProcess(true)).toEqual({
      server: last,
      session: all,
      client: others,
    })
  })

  it('leaves everything where it is when shared', () => {
    expect(applyCoreLayout('shared', process.pid)).toBe('client and server on any core')
    expect(allowedCores(process.pid)).toBe(`0-${cpus().length - 1}`)
  })
})

describe('the PostgreSQL section', () => {
  const cell = (path: string, workload: string, concurrency: number, p50Ms: number[]) => ({
    path,
    workload,
    concurrency,
    opsPerSecond: p50Ms.map((p50) => (concurrency * 1000) / p50),
    p50Ms,
  })
  const run = (p50: number): PostgresResults => ({
    date: '2026-12-04T00:00:00.000Z',
    reps: 3,
    seconds: 3,
    pool: 16,
    cells: [
      cell('agent-state', 'put-1KiB', 64, [p50, p50, p50]),
      cell('raw-same', 'put-1KiB', 64, [10, 10, 10]),
    ],
  })

  it('shows the split run under its own heading, with its own ratios, only when there is one', () => {
    const shared = renderPostgresSection(run(12)).join('\n')
    expect(shared).toContain('| put-1KiB | 64 | 5333 ops/s, p50 12.0 ms | 6400 ops/s, p50 10.0 ms')
    expect(shared).not.toContain('BENCH_PG_CORES=split')
    const both = renderPostgresSection({
      ...run(12),
      split: { ...run(11), cores: 'server on core 1, client on core 0' },
    }).join('\n')
    const [above, below] = both.split(
      '### The database on a core of its own (`BENCH_PG_CORES=split`)',
    )
    expect(above).toContain('| 1.20× |')
    expect(below).toContain('server on core 1, client on core 0')
    expect(below).toContain(
      '| put-1KiB | 64 | 5818 ops/s, p50 11.0 ms | 6400 ops/s, p50 10.0 ms | – | – | 1.10× |',
    )
  })
})
