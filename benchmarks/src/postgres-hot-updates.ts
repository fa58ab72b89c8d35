import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { buildStatements, openPostgresBackend } from '@agent-state/postgres'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { agentStatePath, type Cell, measure, median, type Path, VALUE } from './postgres-paths.js'

/**
 * What a write costs the server on each table layout (`bench:postgres-hot`),
 * in figures load does not change: WAL bytes per put and per compare-and-set
 * (`pg_current_wal_lsn()` before and after N sequential operations, their
 * change hints included), updates and HOT updates (`pg_stat_user_tables`),
 * the shared buffers a put, a get and a listing page of 1000 touch
 * (`EXPLAIN (ANALYZE, BUFFERS)`; the listing also after a `VACUUM`), and the
 * size of the indexes; then the
 * listing page's time on the client (medians of interleaved rounds, noisy).
 *
 * Layouts, each a schema of its own on one private PostgreSQL 15, written by
 * the same statements (only the layout differs):
 * - `schema 1`: migration 1's live-key index `(namespace, key) INCLUDE
 *   (version, size, updated_at) WHERE version IS NOT NULL`, fillfactor 100;
 * - `schema 2, fillfactor 100` and `80`: no live-key index (listings use the
 *   primary key), other fillfactors;
 * - `schema 2`: as shipped, no live-key index and fillfactor 90.
 *
 * Autovacuum is off on the measured tables, so the WAL counted is the
 * operations' own (HOT pruning is not autovacuum: it still runs). Then, unless
 * `BENCH_PG_HOT_TIMED=0`, `schema 1` and `schema 2` are timed side by side as
 * `bench:postgres` times its paths (put / get 1 KiB and compare-and-set at
 * c=1 and c=64, pools of 16, repetitions interleaved; its knobs
 * `BENCH_PG_REPS`, `BENCH_PG_SECONDS`, `BENCH_PG_CONCURRENCY`): noisy, beside
 * the counts. Knobs: `BENCH_PG_HOT_OPS` (1000 puts; half as many
 * compare-and-sets), `BENCH_PG_HOT_ROUNDS` (15 listing rounds). Writes
 * `results/postgres-hot.json`.
 */

const OPS = Number(process.env.BENCH_PG_HOT_OPS ?? 1000)
const ROUNDS = Number(process.env.BENCH_PG_HOT_ROUNDS ?? 15)
const KEYS = 256
const CAS_KEYS = 64
const LISTED = 1000

interface Layout {
  readonly name: string
  readonly schema: string
  readonly alter: (table: string, schema: string) => string
}

const LAYOUTS: readonly Layout[] = [
  {
    name: 'schema 1',
    schema: 'hot_v1',
    alter: (table) =>
      `CREATE INDEX agent_state_entries_live ON ${table} (namespace, key)
         INCLUDE (version, size, updated_at) WHERE version IS NOT NULL;
       ALTER TABLE ${table} SET (fillfactor = 100)`,
  },
  {
    name: 'schema 2, fillfactor 100',
    schema: 'hot_v2_ff100',
    alter: (table) => `ALTER TABLE ${table} SET (fillfactor = 100)`,
  },
  {
    name: 'schema 2, fillfactor 80',
    schema: 'hot_v2_ff80',
    alter: (table) => `ALTER TABLE ${table} SET (fillfactor = 80)`,
  },
  { name: 'schema 2', schema: 'hot_v2', alter: () => 'SELECT 1' },
]

const server = await startPostgresServer()
const admin = new pg.Client({ connectionString: server.url })
await admin.connect()
const one = async <T>(text: string, params: unknown[] = []) =>
  (await admin.query(text, params)).rows[0] as T

const open = (schema: string) =>
  openPostgresBackend({ connectionString: server.url, schema, namespace: 'bench', poolSize: 4 })

async function walBytes(body: () => Promise<void>): Promise<number> {
  const before = (await one<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')).l
  await body()
  return Number(
    (
      await one<{ d: string }>('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1)::text AS d', [
        before,
      ])
    ).d,
  )
}

/** The table's update counters, once the statistics of `updates` updates have arrived. */
async function updateCounts(schema: string, updates: number) {
  const until = Date.now() + 30_000
  for (;;) {
    const row = await one<{ upd: string; hot: string }>(
      `SELECT n_tup_upd::text AS upd, n_tup_hot_upd::text AS hot FROM pg_stat_user_tables
       WHERE schemaname = $1 AND relname = 'agent_state_entries'`,
      [schema],
    )
    if (Number(row.upd) >= updates || Date.now() > until) {
      return { updates: Number(row.upd), hot: Number(row.hot) }
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/** Shared buffers hit, read and dirtied by one statement (run in a rolled-back transaction). */
async function buffers(text: string, params: unknown[]) {
  await admin.query('BEGIN')
  try {
    const plan = (await admin.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`, params))
      .rows[0]['QUERY PLAN'][0]
    const top = plan.Plan
    return {
      hit: top['Shared Hit Blocks'] as number,
      read: top['Shared Read Blocks'] as number,
      dirtied: top['Shared Dirtied Blocks'] as number,
      executionMs: plan['Execution Time'] as number,
      scan: JSON.stringify(plan).match(/"Node Type":"(Index Only Scan|Index Scan|Seq Scan)"/g),
      index: JSON.stringify(plan).match(/"Index Name":"([^"]+)"/)?.[1],
    }
  } finally {
    await admin.query('ROLLBACK')
  }
}

const rows: Record<string, unknown>[] = []
const cells: Cell[] = []
const loadAtStart = loadavg()
const backends = new Map<string, Backend>()
try {
  for (const layout of LAYOUTS) {
    const table = `${layout.schema}.agent_state_entries`
    const seeding = await open(layout.schema)
    await admin.query(layout.alter(table, layout.schema))
    await admin.query(`ALTER TABLE ${table} SET (autovacuum_enabled = false)`)
    for (let k = 0; k < KEYS; k++) await seeding.put(`bench/${k}`, VALUE)
    const versions: string[] = []
    for (let k = 0; k < CAS_KEYS; k++) versions.push((await seeding.put(`cas/${k}`, VALUE)).version)
    for (let k = 0; k < LISTED + 50; k++) {
      await seeding.put(`list/${String(k).padStart(5, '0')}`, VALUE)
    }
    await seeding.close()
    const base = await updateCounts(layout.schema, 0)

    let backend = await open(layout.schema)
    const putWal = await walBytes(async () => {
      for (let i = 0; i < OPS; i++) await backend.put(`bench/${(i * 7919) % KEYS}`, VALUE)
    })
    await backend.close()
    const afterPuts = await updateCounts(layout.schema, base.updates + OPS)

    backend = await open(layout.schema)
    const casOps = Math.floor(OPS / 2)
    const casWal = await walBytes(async () => {
      for (let i = 0; i < casOps; i++) {
        const k = i % CAS_KEYS
        versions[k] = (
          await backend.put(`cas/${k}`, VALUE, { ifMatch: versions[k] as string })
        ).version
      }
    })
    await backend.close()
    const afterCas = await updateCounts(layout.schema, afterPuts.updates + casOps)

    const sql = buildStatements(layout.schema)
    const value = Buffer.from(VALUE)
    const putShape = { fenced: false, ifMatch: false, ifNoneMatch: false }
    const size = await one<{ indexes: string; table: string }>(
      `SELECT pg_indexes_size($1)::text AS indexes, pg_table_size($1)::text AS table`,
      [table],
    )
    rows.push({
      layout: layout.name,
      walPerPut: Math.round(putWal / OPS),
      walPerCas: Math.round(casWal / casOps),
      putUpdates: afterPuts.updates - base.updates,
      putHot: afterPuts.hot - base.hot,
      casUpdates: afterCas.updates - afterPuts.updates,
      casHot: afterCas.hot - afterPuts.hot,
      putBuffers: await buffers(sql.put(putShape), [
        'bench',
        'bench/1',
        'abcdefghABCDEFGH',
        null,
        1024,
        value,
        0,
      ]),
      getBuffers: await buffers(sql.readWithValue, ['bench', 'bench/1']),
      listBuffers: await buffers(sql.scan({ from: 'list/', to: 'list0', inclusive: true }), [
        'bench',
        'list/',
        'list0',
        LISTED + 1,
      ]),
      // After a VACUUM the visibility map lets schema 1's index-only scan skip the heap.
      listBuffersVacuumed: await admin
        .query(`VACUUM ${table}`)
        .then(() =>
          buffers(sql.scan({ from: 'list/', to: 'list0', inclusive: true }), [
            'bench',
            'list/',
            'list0',
            LISTED + 1,
          ]),
        ),
      indexBytes: Number(size.indexes),
      tableBytes: Number(size.table),
    })
    backends.set(layout.name, await open(layout.schema))
  }

  // A listing page of 1000 on the client, the layouts interleaved (rotated order).
  const listMs = new Map<string, number[]>(LAYOUTS.map((layout) => [layout.name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (let j = 0; j < LAYOUTS.length; j++) {
      const layout = LAYOUTS[(round + j) % LAYOUTS.length] as Layout
      const backend = backends.get(layout.name) as Backend
      const started = performance.now()
      const page = await backend.list({ prefix: 'list/', limit: LISTED })
      if (page.entries.length !== LISTED) throw new Error('short listing page')
      listMs.get(layout.name)?.push(performance.now() - started)
    }
  }
  for (const row of rows) row.listPageMs = median(listMs.get(row.layout as string) ?? [])

  if (process.env.BENCH_PG_HOT_TIMED !== '0') {
    const timed: (Path & { backend: Backend })[] = []
    for (const layout of LAYOUTS.filter((l) => l.name === 'schema 1' || l.name === 'schema 2')) {
      timed.push(await agentStatePath(server.url, 16, layout.schema, layout.name))
    }
    try {
      await measure(timed, ['put-1KiB', 'get-1KiB', 'cas'], cells)
    } finally {
      for (const path of timed) await path.backend.close()
    }
  }
} finally {
  for (const backend of backends.values()) await backend.close()
  await admin.end()
  await server.stop()
}
const loads = { start: loadAtStart, end: loadavg() }
console.log(JSON.stringify(rows, null, 2))
console.log(
  `load average ${loads.start[0]?.toFixed(1)} at the start, ${loads.end[0]?.toFixed(1)} at the end`,
)
const out = join(import.meta.dirname, '..', 'results', 'postgres-hot.json')
writeFileSync(
  out,
  `${JSON.stringify({ date: new Date().toISOString(), loadAvg: loads, ops: OPS, rounds: ROUNDS, rows, cells }, null, 2)}\n`,
)
console.log(`written ${out}`)
