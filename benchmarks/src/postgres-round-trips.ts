import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { countQueries } from '../../packages/backend-postgres/test/query-count.js'
import { langGraphPaths } from './postgres-langgraph.js'
import { agentStatePath, type Op, rawSamePath } from './postgres-paths.js'
import type { PostgresTrips } from './report/postgres.js'

/**
 * What one operation of each `bench:postgres` path sends, at concurrency 1
 * (`bench:postgres-trips`): the counts load does not change, beside the
 * benchmark's timings. Counted on the client by wrapping `pg.Client`'s
 * `query` (every path, PostgresSaver included, runs on the same `pg`):
 * - round trips: statements sent while their connection had none in flight
 *   (one sent behind another, node-postgres pipeline mode, rides along);
 * - statements, and among them change hints (`pg_notify`);
 * - write transactions: transaction ids the server assigned meanwhile
 *   (`pg_snapshot_xmax` of a snapshot before and after, on a connection of
 *   its own). Each is a commit; those of the hints skip the WAL flush
 *   (`synchronous_commit` off), the others wait for it.
 *
 * Each operation runs `BENCH_PG_TRIPS_OPS` (20) times after a warm-up; the
 * counts are their means. Writes `results/postgres-trips.json`.
 */

const OPS = Number(process.env.BENCH_PG_TRIPS_OPS ?? 20)

const { counts, uncounted: query } = countQueries()

type Row = PostgresTrips['rows'][number]

const server = await startPostgresServer()
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
// Through the unwrapped query: the probe is not counted.
const xmax = async () => {
  const probe = query.bind(admin) as (text: string) => Promise<pg.QueryResult<{ x: string }>>
  return Number(
    (await probe('SELECT pg_snapshot_xmax(pg_current_snapshot())::text AS x')).rows[0]?.x,
  )
}

async function count(path: string, operation: string, op: Op): Promise<Row> {
  await op(0, 0)
  const before = { ...counts }
  const xidsBefore = await xmax()
  for (let i = 1; i <= OPS; i++) await op(0, i)
  const xids = (await xmax()) - xidsBefore
  const per = (n: number) => Math.round((n / OPS) * 100) / 100
  return {
    path,
    operation,
    roundTrips: per(counts.roundTrips - before.roundTrips),
    statements: per(counts.statements - before.statements),
    hints: per(counts.hints - before.hints),
    writeTransactions: per(xids),
  }
}

const rows: Row[] = []
try {
  const ours = await agentStatePath(server.url, 4)
  const raw = await rawSamePath(server.url, 4)
  for (const path of [ours, raw]) {
    for (const [operation, op] of Object.entries(path.ops)) {
      rows.push(await count(path.name, operation, op as Op))
    }
  }
  await ours.backend.close()
  await raw.pool.end()
  const savers = await langGraphPaths(server.url, 1, 4)
  for (const saver of savers) {
    for (const [operation, op] of Object.entries(saver.ops)) {
      rows.push(await count(saver.name, operation, op))
    }
    await saver.close()
  }
} finally {
  await admin.end()
  await server.stop()
}
console.table(rows)
const out = join(import.meta.dirname, '..', 'results', 'postgres-trips.json')
writeFileSync(
  out,
  `${JSON.stringify({ date: new Date().toISOString(), ops: OPS, rows }, null, 2)}\n`,
)
console.log(`written ${out}`)
