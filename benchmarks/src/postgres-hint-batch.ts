import { loadavg } from 'node:os'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { openWithHooks } from '../../packages/backend-postgres/src/postgres-backend.js'
import {
  agentStatePath,
  type Cell,
  measure,
  median,
  type Path,
  rawSamePath,
  seededWriteOps,
} from './postgres-paths.js'

/**
 * The change-hint batch measured (`bench:postgres-hints`): the backend as
 * shipped (a write's hint pipelined behind it, or batched with the hints of
 * other writes while one is in flight: hint-batch.ts) against the same backend
 * sending one hint per write (its `batchHints: false` hook, the code before
 * the batch) and `raw-same` (the write statement alone), put and
 * compare-and-set, interleaved in one process on one server (`BENCH_PG_REPS`,
 * `BENCH_PG_SECONDS`, `BENCH_PG_CONCURRENCY` as `bench:postgres`). Prints
 * the cells, and the hint statements per write of each path and workload
 * over all its runs (a count: `pg_notify` statements sent, on the client);
 * writes nothing (the figures go to FINDINGS by hand, with the load).
 */

/** Hint statements and operations, by `<path> <workload>`, while that path's operations run. */
const tally = new Map<string, { hints: number; ops: number }>()
let running = ''
const query = pg.Client.prototype.query
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  const text = typeof args[0] === 'string' ? args[0] : ''
  const slot = tally.get(running)
  if (slot !== undefined && text.includes('pg_notify')) slot.hints++
  return (query as (...a: unknown[]) => unknown).apply(this, args)
} as typeof query

/** `path` with each operation counted in {@link tally}. */
function tallied(path: Path): Path {
  const ops = Object.fromEntries(
    Object.entries(path.ops).map(([workload, op]) => {
      const name = `${path.name} ${workload}`
      tally.set(name, { hints: 0, ops: 0 })
      return [
        workload,
        (w: number, i: number) => {
          running = name
          const slot = tally.get(name) as { ops: number }
          slot.ops++
          return op(w, i)
        },
      ]
    }),
  )
  return { ...path, ops }
}

const POOL = 16

async function hintPerWritePath(url: string): Promise<Path & { close(): Promise<void> }> {
  const backend = await openWithHooks(
    { connectionString: url, namespace: 'per-write', poolSize: POOL },
    { batchHints: false },
  )
  return {
    name: 'hint per write',
    ops: await seededWriteOps(backend),
    close: () => backend.close(),
  }
}

const loadAtStart = loadavg()
const server = await startPostgresServer({ settings: { max_connections: '400' } })
try {
  const ours = await agentStatePath(server.url, POOL)
  const perWrite = await hintPerWritePath(server.url)
  const raw = await rawSamePath(server.url, POOL)
  const cells: Cell[] = []
  await measure([ours, perWrite, raw].map(tallied), ['put-1KiB', 'cas'], cells)
  for (const cell of cells) {
    console.log(
      JSON.stringify({
        ...cell,
        medianOps: Math.round(median(cell.opsPerSecond)),
        medianP50: median(cell.p50Ms),
      }),
    )
  }
  for (const [name, { hints, ops }] of tally) {
    if (ops === 0) continue
    console.log(
      `${name}: ${(hints / ops).toFixed(3)} hint statements per operation (${ops} operations)`,
    )
  }
  console.log('load average', loadAtStart, 'to', loadavg())
  await ours.backend.close()
  await perWrite.close()
  await raw.pool.end()
} finally {
  // An idle pooled connection reports the server's shutdown as 57P01: nothing is measured any more.
  process.on('uncaughtException', (error) => {
    if ((error as { code?: string }).code !== '57P01') throw error
  })
  await server.stop()
}
