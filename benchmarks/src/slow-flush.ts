import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/**
 * `BENCH_PG_FLUSH_MS`: milliseconds every flush of the benchmark's PostgreSQL
 * server waits before it flushes (default 0: the host's disk as it is). This
 * host's local disk flushes in a fraction of a millisecond, so a put at c=1
 * spends its time on CPU, and concurrent sessions sharing one flush (the
 * group commit PostgreSQL does for free) saves little. A networked volume
 * takes a millisecond or more per flush; with a delay here, c=1 waits on the
 * flush and c=64 shows what sharing it is worth.
 */
export function flushDelayMs(): number {
  const asked = process.env.BENCH_PG_FLUSH_MS ?? '0'
  const ms = Number(asked)
  if (asked.trim() === '' || !Number.isFinite(ms) || ms < 0) {
    throw new Error(
      `BENCH_PG_FLUSH_MS must be a number of milliseconds ≥ 0, not ${JSON.stringify(asked)}`,
    )
  }
  return ms
}

/**
 * Runs `start` (which starts the server) with `native/slow-flush.c` compiled
 * and preloaded (`LD_PRELOAD`) into what it spawns, so that each `fdatasync`
 * and `fsync` of the server waits `ms` first; nothing is preloaded for 0. The
 * environment is restored before this resolves, so later children (`psql`,
 * `taskset`) run as usual. Check the server with {@link hasFlushDelay}.
 */
export async function withFlushDelay<T>(ms: number, start: () => Promise<T>): Promise<T> {
  if (ms === 0) return start()
  // World-readable: the server runs as another user when the benchmark runs as root.
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-slow-flush-'))
  chmodSync(dir, 0o755)
  const library = join(dir, LIBRARY)
  execFileSync('cc', [
    '-shared',
    '-fPIC',
    '-O2',
    '-o',
    library,
    join(import.meta.dirname, '..', 'native', 'slow-flush.c'),
    '-ldl',
  ])
  chmodSync(library, 0o755)
  const saved = { preload: process.env.LD_PRELOAD, delay: process.env.AGENT_STATE_FLUSH_DELAY_US }
  process.env.LD_PRELOAD = library
  process.env.AGENT_STATE_FLUSH_DELAY_US = String(Math.round(ms * 1000))
  try {
    return await start()
  } finally {
    restore('LD_PRELOAD', saved.preload)
    restore('AGENT_STATE_FLUSH_DELAY_US', saved.delay)
    // The server keeps its mapping; the file is no longer needed.
    rmSync(dir, { recursive: true, force: true })
  }
}

const LIBRARY = 'slow-flush.so'

/** Whether process `pid` (a postmaster started by {@link withFlushDelay}) has the delay loaded. */
export function hasFlushDelay(pid: number | undefined): boolean {
  if (pid === undefined) return false
  return readFileSync(`/proc/${pid}/maps`, 'utf8')
    .split('\n')
    .some((line) => line.includes('/agent-state-slow-flush-') && line.includes(`/${LIBRARY}`))
}

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name]
  else process.env[name] = value
}
