import { loadavg } from 'node:os'
import type { Lease } from '@agent-state/core'
import { createPostgresBackend } from '@agent-state/postgres'
import { startPostgresServer } from '@agent-state/test-services'
import { type Cell, CONCURRENCY, key, measure, median, type Path, VALUE } from './postgres-paths.js'

/**
 * What a write fenced by another key's lease costs on PostgreSQL
 * (`bench:postgres-fence`): the backend's `put` of 1 KiB against the same put
 * with `fence` (each caller holds the lease of an owner key of its own, as an
 * owning LangGraph saver holds its thread's), interleaved in one process on
 * one server (`BENCH_PG_REPS`, `BENCH_PG_SECONDS`, `BENCH_PG_CONCURRENCY` as
 * `bench:postgres`). The fenced put is one statement too
 * (`agent_state_put_fenced`, which reads the owner's row `FOR SHARE`), so the
 * difference is that function's extra work on the server. Prints the cells;
 * writes nothing (the figures go to FINDINGS by hand, with the load).
 */

const POOL = 16
const loadAtStart = loadavg()
const server = await startPostgresServer({ settings: { max_connections: '200' } })
try {
  const backend = createPostgresBackend({
    connectionString: server.url,
    namespace: 'fence',
    poolSize: POOL,
  })
  const callers = Math.max(...CONCURRENCY)
  const leases: Lease[] = await Promise.all(
    Array.from({ length: callers }, (_, worker) =>
      backend.acquireLease(`owner/${worker}`, { holder: `caller-${worker}`, ttlMs: 3_600_000 }),
    ),
  )
  const leaseOf = (worker: number) => leases[worker] as Lease
  const plain: Path = {
    name: 'put',
    ops: { 'put-1KiB': (w, i) => backend.put(key(w, i), VALUE) },
  }
  const fenced: Path = {
    name: 'put fenced',
    ops: { 'put-1KiB': (w, i) => backend.put(key(w, i), VALUE, { fence: leaseOf(w) }) },
  }
  const cells: Cell[] = []
  await measure([plain, fenced], ['put-1KiB'], cells)
  for (const concurrency of CONCURRENCY) {
    const of = (path: string) =>
      cells.find((cell) => cell.path === path && cell.concurrency === concurrency)
    const base = of('put')
    const fencedCell = of('put fenced')
    if (base === undefined || fencedCell === undefined) continue
    console.log(
      `c=${concurrency}: fenced / plain ops/s ${(median(fencedCell.opsPerSecond) / median(base.opsPerSecond)).toFixed(3)}, p50 ${(median(fencedCell.p50Ms) / median(base.p50Ms)).toFixed(3)}`,
    )
  }
  console.log('load average', loadAtStart, 'to', loadavg())
  await backend.close()
} finally {
  await server.stop()
}
