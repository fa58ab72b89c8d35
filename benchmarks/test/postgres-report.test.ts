import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { applyCoreLayout, coreLayout, processTree } from '../src/cores.js'
import {
  type PostgresResults,
  renderPostgresSection,
  resultsFileOf,
} from '../src/report/postgres.js'
import { flushDelayMs, hasFlushDelay, withFlushDelay } from '../src/slow-flush.js'

/**
 * `BENCH_PG_CORES` (cores.ts), `BENCH_PG_FLUSH_MS` (slow-flush.ts) and the
 * sections of BENCHMARKS.md their runs render (report/postgres.ts).
 */

/** Gives environment variable `name` its value back after each test of the enclosing block. */
function restoredAfterEach(name: string): void {
  const before = process.env[name]
  afterEach(() => {
    if (before === undefined) delete process.env[name]
    else process.env[name] = before
  })
}

describe('BENCH_PG_CORES', () => {
  restoredAfterEach('BENCH_PG_CORES')

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

  it('shows each run under other conditions under its own heading, with its own ratios', () => {
    const shared = renderPostgresSection(run(12)).join('\n')
    expect(shared).toContain('| put-1KiB | 64 | 5333 ops/s, p50 12.0 ms | 6400 ops/s, p50 10.0 ms')
    expect(shared).not.toContain('BENCH_PG_CORES=split')
    const all = renderPostgresSection({
      ...run(12),
      variants: [
        { ...run(11), cores: 'server on core 1, client on core 0' },
        { ...run(13), flushMs: 2 },
      ],
    }).join('\n')
    const sections = all.split(/^### /m)
    const [above, split, flush] = [0, 1, 2].map((at) => sections[at] ?? '')
    expect(above).toContain('| 1.20× |')
    expect(split).toMatch(/^The database on a core of its own \(`BENCH_PG_CORES=split`\)/)
    expect(split).toContain('server on core 1, client on core 0')
    expect(split).toContain(
      '| put-1KiB | 64 | 5818 ops/s, p50 11.0 ms | 6400 ops/s, p50 10.0 ms | – | – | 1.10× |',
    )
    expect(flush).toMatch(/^A flush of 2 ms \(`BENCH_PG_FLUSH_MS=2`\)/)
    expect(flush).toContain('| 1.30× |')
  })

  it('writes each run under other conditions to a file of its own', () => {
    expect(resultsFileOf({ split: false, flushMs: 0 })).toBe('postgres.json')
    expect(resultsFileOf({ split: true, flushMs: 0 })).toBe('postgres-split.json')
    expect(resultsFileOf({ split: false, flushMs: 2 })).toBe('postgres-flush-2ms.json')
    expect(resultsFileOf({ split: true, flushMs: 0.5 })).toBe('postgres-split-flush-0.5ms.json')
  })
})

describe('BENCH_PG_FLUSH_MS', () => {
  restoredAfterEach('BENCH_PG_FLUSH_MS')

  it('is 0 unless given, and refuses what is not a number of milliseconds by name', () => {
    delete process.env.BENCH_PG_FLUSH_MS
    expect(flushDelayMs()).toBe(0)
    process.env.BENCH_PG_FLUSH_MS = '2.5'
    expect(flushDelayMs()).toBe(2.5)
    for (const bad of ['-1', 'slow', '']) {
      process.env.BENCH_PG_FLUSH_MS = bad
      expect(() => flushDelayMs()).toThrow(
        `BENCH_PG_FLUSH_MS must be a number of milliseconds ≥ 0, not ${JSON.stringify(bad)}`,
      )
    }
  })

  /** Milliseconds one `fdatasync` of a fresh file takes in a node process started by `start`. */
  const timedFlush = (delayMs: number) =>
    withFlushDelay(delayMs, async () => {
      const file = join(tmpdir(), `agent-state-flush-${process.pid}-${delayMs}`)
      const script = `const fs = require('node:fs'); const fd = fs.openSync(${JSON.stringify(file)}, 'w');
        fs.writeSync(fd, 'x'); const t = process.hrtime.bigint(); fs.fdatasyncSync(fd);
        console.log(Number(process.hrtime.bigint() - t) / 1e6); fs.closeSync(fd); fs.unlinkSync(${JSON.stringify(file)})`
      return Number(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
    })

  it('makes each flush of what it starts wait, and leaves later children alone', async () => {
    expect(await timedFlush(1000)).toBeGreaterThanOrEqual(1000)
    expect(process.env.LD_PRELOAD).toBeUndefined()
    // The same flush with no delay asked: nothing preloaded (the comparison proves the check).
    expect(await timedFlush(0)).toBeLessThan(1000)
  })

  it('tells a process that has the delay loaded from one that does not', async () => {
    // Resolved once the child has loaded its libraries: the library's file is removed then.
    const child = await withFlushDelay(1, async () => {
      const started = spawn('sleep', ['30'], { stdio: 'ignore' })
      await new Promise((resolve) => setTimeout(resolve, 300))
      return started
    })
    try {
      expect(hasFlushDelay(child.pid)).toBe(true)
      expect(hasFlushDelay(process.pid)).toBe(false)
    } finally {
      child.kill('SIGKILL')
    }
  })
})
