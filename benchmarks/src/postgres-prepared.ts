import { loadavg } from 'node:os'
import { buildStatements } from '@agent-state/postgres'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { treeCpuSeconds } from '../../test-suites/services/src/process-cpu.js'
import {
  CONCURRENCY,
  key,
  median,
  type Op,
  REPS,
  run,
  SECONDS,
  seedNamespace,
  VALUE,
} from './postgres-paths.js'

/**
 * Would named prepared statements make PostgreSQL writes scale (issue 31's
 * "c=64 throughput ≥ 5× c=1")? Measurement only, nothing in the backend
 * changes. On one private PostgreSQL 15 with `pg_stat_statements`
 * (`track_planning` on), the raw `pg` client runs the backend's own put,
 * compare-and-set and read statements (`buildStatements`: no hint, no
 * rules, no decoding) three ways, interleaved in one process, each on its
 * own pool configured like the backend's (connection.ts: `pipeline`,
 * `query_timeout`, the server-side timeouts as startup parameters):
 * - `unnamed`: `pool.query(text, values)`, what the backend sends today
 *   (Parse, Bind, Describe, Execute, Sync per statement; parsed, analysed
 *   and planned at every execution);
 * - `named`: `pool.query({ name, text, values })`, one server-side prepared
 *   statement per text and connection (Parse once; `plan_cache_mode` auto:
 *   custom plans for the first 5 executions, then the generic plan if its
 *   cost is not above theirs);
 * - `named, custom plans`: the same with `plan_cache_mode =
 *   force_custom_plan` (a startup option): parsing saved, planning not, so
 *   the two savings can be told apart.
 *
 * Per way, workload and concurrency (`BENCH_PG_CONCURRENCY`, `1,64`): ops/s
 * and p50 (medians over `BENCH_PG_REPS` rounds of `BENCH_PG_SECONDS`, the
 * ways' order rotating), the client's CPU per operation
 * (`process.cpuUsage`), the server's CPU per operation (the postmaster and
 * its children, `/proc/<pid>/stat`) and, from `pg_stat_statements`, plans
 * per execution, plan and execution time per execution. Then the plan
 * cache of the named pools' connections (`pg_prepared_statements`: generic
 * against custom plans) and the memory the prepared statements hold per
 * connection (`pg_backend_memory_contexts`), and each statement's share of
 * it on a fresh connection. Pools of `BENCH_PG_POOL` (16,
 * as `bench:postgres`).
 */

const POOL = Number(process.env.BENCH_PG_POOL ?? 16)
const NAMESPACE = 'raw'
/**
 * `BENCH_PG_STATEMENT_STATS=0`: no `pg_stat_statements` (its query
 * jumbling at every parse and its planning timer are server CPU of their
 * own, paid more by the unnamed way); operations are then counted by the client.
 */
const STATEMENT_STATS = process.env.BENCH_PG_STATEMENT_STATS !== '0'

const loadAtStart = loadavg()
const server = await startPostgresServer({
  settings: {
    max_connections: '200',
    ...(STATEMENT_STATS
      ? {
          shared_preload_libraries: 'pg_stat_statements',
          'pg_stat_statements.track_planning': 'on',
        }
      : {}),
  },
})

/** A pool configured as the backend's (connection.ts, with options.ts' defaults), plus `options`. */
function backendLikePool(options?: string): pg.Pool {
  const pool = new pg.Pool({
    connectionString: server.url,
    max: POOL,
    idleTimeoutMillis: 30_000,
    application_name: 'agent-state',
    query_timeout: 5000 + 2000,
    pipeline: true,
    statement_timeout: 5000,
    lock_timeout: 1000,
    idle_in_transaction_session_timeout: 5000,
    ...(options === undefined ? {} : { options }),
  } as pg.PoolConfig)
  // An idle connection ended by the server's shutdown must not crash the probe.
  pool.on('error', () => {})
  return pool
}

/** The server's CPU seconds: the postmaster (with its reaped children) and its live children. */
const serverCpu = (): number => treeCpuSeconds(server.pid)

const stats = new pg.Client({ connectionString: server.url })
await stats.connect()
if (STATEMENT_STATS) await stats.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements')

/** `pg_stat_statements` summed over every statement but this probe's own. */
async function statementStats(): Promise<{
  calls: number
  plans: number
  planMs: number
  execMs: number
}> {
  if (!STATEMENT_STATS)
    return { calls: Number.NaN, plans: Number.NaN, planMs: Number.NaN, execMs: Number.NaN }
  const { rows } = await stats.query<{
    calls: number
    plans: number
    plan_ms: number
    exec_ms: number
  }>(
    `SELECT coalesce(sum(calls), 0)::float8 AS calls, coalesce(sum(plans), 0)::float8 AS plans,
       coalesce(sum(total_plan_time), 0)::float8 AS plan_ms, coalesce(sum(total_exec_time), 0)::float8 AS exec_ms
     FROM pg_stat_statements
     WHERE query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_prepared_statements%'
       AND query NOT LIKE '%pg_backend_memory_contexts%'`,
  )
  const row = rows[0] as { calls: number; plans: number; plan_ms: number; exec_ms: number }
  return { calls: row.calls, plans: row.plans, planMs: row.plan_ms, execMs: row.exec_ms }
}

// The backend creates its schema and the rows, so the layout is the backend's own.
const versions = await seedNamespace(server.url, NAMESPACE, Math.max(...CONCURRENCY))

// The backend's own statement texts: the unconditional put, the compare-and-set, the read.
const sql = buildStatements('agent_state')
const texts = {
  put: sql.put({ fenced: false, ifMatch: false, ifNoneMatch: false }),
  cas: sql.put({ fenced: false, ifMatch: true, ifNoneMatch: false }),
  get: sql.readWithValue,
} as const
type Workload = keyof typeof texts
const value = Buffer.from(VALUE)
// The put's parameters as the backend binds them (`PutShape`): namespace, key,
// version characters, writer, size, value, CRC-32 (not checked by the server).
const params = (k: string) => [NAMESPACE, k, 'abcdefghABCDEFGH', null, 1024, value, 0]

/** Sends one workload's statement on a pool (or, for the plan cache's shares, one client). */
type Send = (
  pool: pg.Pool | pg.Client,
  workload: Workload,
  values: unknown[],
) => Promise<pg.QueryResult>
const unnamed: Send = (pool, workload, values) => pool.query(texts[workload], values)
const named: Send = (pool, workload, values) =>
  pool.query({ name: `agent_state_${workload}`, text: texts[workload], values })
const ways = [
  { name: 'unnamed', pool: backendLikePool(), send: unnamed },
  { name: 'named', pool: backendLikePool(), send: named },
  {
    name: 'named, custom plans',
    pool: backendLikePool('-c plan_cache_mode=force_custom_plan'),
    send: named,
  },
] as const
type Way = (typeof ways)[number]

/** The workload's operation on `way` (the compare-and-set keys are the callers' own: no race retries). */
function op(way: Way, workload: Workload): Op {
  if (workload === 'get') return (w, i) => way.send(way.pool, 'get', [NAMESPACE, key(w, i)])
  if (workload === 'put') return (w, i) => way.send(way.pool, 'put', params(key(w, i)))
  return async (w) => {
    const k = `cas/${w}`
    const result = await way.send(way.pool, 'cas', [...params(k), versions.get(k)])
    const written = result.rows[0]?.written_version as string | null | undefined
    if (typeof written !== 'string')
      throw new Error(`compare-and-set of ${k} refused: versions out of step`)
    versions.set(k, written)
  }
}

/** One cell's figures, per operation. */
interface Sample {
  readonly opsPerSecond: number
  readonly p50Ms: number
  readonly clientUs: number
  readonly serverUs: number
  readonly plansPerCall: number
  readonly planUs: number
  readonly execUs: number
}

async function sample(way: Way, workload: Workload, concurrency: number): Promise<Sample> {
  const before = await statementStats()
  const server0 = serverCpu()
  const client0 = process.cpuUsage()
  const started = performance.now()
  const { opsPerSecond, p50Ms } = await run(op(way, workload), concurrency)
  const elapsed = (performance.now() - started) / 1000
  const client = process.cpuUsage(client0)
  const serverSeconds = serverCpu() - server0
  const after = await statementStats()
  // The server's count when it keeps one, else the client's.
  const calls = STATEMENT_STATS ? after.calls - before.calls : Math.round(opsPerSecond * elapsed)
  return {
    opsPerSecond,
    p50Ms,
    clientUs: (client.user + client.system) / calls,
    serverUs: (serverSeconds * 1e6) / calls,
    plansPerCall: (after.plans - before.plans) / calls,
    planUs: ((after.planMs - before.planMs) * 1000) / calls,
    execUs: ((after.execMs - before.execMs) * 1000) / calls,
  }
}

const workloads: Workload[] = ['put', 'cas', 'get']
const results = new Map<string, Sample[]>()
const cellId = (way: Way, workload: Workload, c: number) => `${workload}|${c}|${way.name}`
for (const workload of workloads) {
  for (const concurrency of CONCURRENCY) {
    for (const way of ways) await sample(way, workload, concurrency) // warm-up (and the named plans)
    for (let rep = 0; rep < REPS; rep++) {
      for (let j = 0; j < ways.length; j++) {
        const way = ways[(rep + j) % ways.length] as Way
        const id = cellId(way, workload, concurrency)
        results.set(id, [...(results.get(id) ?? []), await sample(way, workload, concurrency)])
      }
    }
  }
}

const fmt = (n: number, digits = 0) => n.toFixed(digits)
const med = (samples: Sample[], field: keyof Sample) => median(samples.map((s) => s[field]))
console.log(
  `PostgreSQL prepared statements: ${REPS} rounds of ${SECONDS} s per cell, pools of ${POOL}, load average at start ${loadAtStart.map((l) => l.toFixed(1)).join(' ')}`,
)
console.log(
  '| workload | c | way | ops/s | p50 ms | client µs/op | server µs/op | plans/exec | plan µs/exec | exec µs/exec |',
)
console.log('| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
for (const workload of workloads) {
  for (const concurrency of CONCURRENCY) {
    for (const way of ways) {
      const samples = results.get(cellId(way, workload, concurrency)) ?? []
      console.log(
        `| ${workload} | ${concurrency} | ${way.name} | ${fmt(med(samples, 'opsPerSecond'))} | ${fmt(med(samples, 'p50Ms'), 3)} | ${fmt(med(samples, 'clientUs'))} | ${fmt(med(samples, 'serverUs'))} | ${fmt(med(samples, 'plansPerCall'), 2)} | ${fmt(med(samples, 'planUs'))} | ${fmt(med(samples, 'execUs'))} |`,
      )
    }
  }
}
const [low, high] = [Math.min(...CONCURRENCY), Math.max(...CONCURRENCY)]
for (const workload of workloads) {
  const ratios = ways.map((way) => {
    const rate = (c: number) => med(results.get(cellId(way, workload, c)) ?? [], 'opsPerSecond')
    return `${way.name} ${(rate(high) / rate(low)).toFixed(2)}×`
  })
  console.log(`${workload} throughput c=${high} / c=${low}: ${ratios.join(', ')}`)
}

/**
 * A connection's plan cache (the `CachedPlan*` memory contexts, but this
 * statement's own unnamed one) and its whole memory, in bytes.
 */
const MEMORY_SQL = `SELECT coalesce(sum(total_bytes) FILTER (WHERE name IN ('CachedPlan', 'CachedPlanSource', 'CachedPlanQuery')
    AND coalesce(ident, '') NOT LIKE '%pg_backend_memory_contexts%'), 0) AS cached,
    sum(total_bytes) AS total
  FROM pg_backend_memory_contexts`

// The plan cache and the memory of the prepared statements, connection by
// connection. First every connection of every pool runs each statement (16
// rounds of 64 callers, more than the 5 custom plans before a generic one):
// the c=1 cells used one connection, and the pools end idle ones after 30 s.
const planMode = await stats.query<{ plan_cache_mode: string }>('SHOW plan_cache_mode')
console.log(`plan_cache_mode (server default): ${planMode.rows[0]?.plan_cache_mode}`)
for (const way of ways) {
  for (const workload of workloads) {
    const send = op(way, workload)
    for (let i = 0; i < 16; i++) await Promise.all(Array.from({ length: 64 }, (_, w) => send(w, i)))
  }
}
for (const way of ways) {
  const clients = await Promise.all(Array.from({ length: POOL }, () => way.pool.connect()))
  try {
    const plans = new Map<string, { generic: number; custom: number }>()
    const cachedBytes: number[] = []
    const totalBytes: number[] = []
    let statements = 0
    for (const client of clients) {
      const prepared = await client.query<{
        name: string
        generic_plans: string
        custom_plans: string
      }>('SELECT name, generic_plans, custom_plans FROM pg_prepared_statements')
      statements += prepared.rows.length
      for (const row of prepared.rows) {
        const seen = plans.get(row.name) ?? { generic: 0, custom: 0 }
        seen.generic += Number(row.generic_plans)
        seen.custom += Number(row.custom_plans)
        plans.set(row.name, seen)
      }
      const memory = await client.query<{ cached: string; total: string }>(MEMORY_SQL)
      cachedBytes.push(Number(memory.rows[0]?.cached))
      totalBytes.push(Number(memory.rows[0]?.total))
    }
    const planned = [...plans].map(
      ([name, n]) => `${name} ${n.generic} generic / ${n.custom} custom`,
    )
    const cached = cachedBytes.reduce((sum, bytes) => sum + bytes, 0)
    console.log(
      `${way.name}: ${planned.length === 0 ? 'no prepared statements' : planned.join(', ')}; ${statements} prepared on ${POOL} connections, ${statements === 0 ? '–' : fmt(cached / statements / 1024, 1)} KiB of plan cache each; per connection (median): plan cache ${fmt(median(cachedBytes) / 1024, 1)} KiB, backend memory ${fmt(median(totalBytes) / 1024, 0)} KiB`,
    )
  } finally {
    for (const client of clients) client.release()
  }
}
// Each statement's share: a fresh connection prepares them one after another
// (8 executions each, past the 5 custom plans), its plan cache read after each.
const single = new pg.Client({ connectionString: server.url })
await single.connect()
try {
  const cacheOf = async () =>
    Number((await single.query<{ cached: string }>(MEMORY_SQL)).rows[0]?.cached)
  let before = await cacheOf()
  const shares: string[] = []
  for (const workload of workloads) {
    // A compare-and-set refused for its stale version is planned and cached all the same.
    const values =
      workload === 'get'
        ? [NAMESPACE, 'bench/0']
        : workload === 'put'
          ? params('bench/0')
          : [...params('cas/0'), 'stale']
    for (let i = 0; i < 8; i++) await named(single, workload, values)
    const after = await cacheOf()
    shares.push(`${workload} ${fmt((after - before) / 1024, 1)} KiB`)
    before = after
  }
  console.log(
    `plan cache per named statement (generic plan kept), one connection: ${shares.join(', ')}`,
  )
} finally {
  await single.end()
}
console.log(
  `load average at end ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
await stats.end()
await Promise.all(ways.map((way) => way.pool.end()))
await server.stop()
