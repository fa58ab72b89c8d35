import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { buildStatements, createPostgresBackend } from '@agent-state/postgres'
import { startPostgresServer } from '@agent-state/test-services'
import KeyvPostgres from '@keyv/postgres'
import Keyv from 'keyv'
import pg from 'pg'
import { type LangGraphWorkload, langGraphPaths } from './postgres-langgraph.js'
import { type PostgresResults, readPostgresResults } from './report/postgres.js'
import { rebuildReports } from './report/rebuild.js'

/**
 * The PostgreSQL backend against the raw `pg` client and `@keyv/postgres` on
 * the same private PostgreSQL 15, in one process (`bench:postgres`).
 *
 * Paths, all on pools of the same size:
 * - `agent-state`: `createPostgresBackend` (one conditional statement per
 *   write, its change hint pipelined behind it: one round trip);
 * - `raw-same`: `pg` running the backend's own statements (`buildStatements`:
 *   the write statement, the read), without the change hint, core's rules, the
 *   checksum or the row decoding: what the library adds;
 * - `raw-upsert`: one `INSERT … ON CONFLICT DO UPDATE` (last writer wins, no
 *   version check, no fencing): the floor, and what LangGraph's saver does;
 * - `keyv`: `@keyv/postgres` 2 (upsert, no versions).
 *
 * Then the LangGraph savers (`postgres-langgraph.ts`): ours, ours with thread
 * ownership, and `@langchain/langgraph-checkpoint-postgres`'s PostgresSaver.
 *
 * Closed loop: `c` callers each issue an operation and await it, for
 * `BENCH_PG_SECONDS` (default 3) per repetition; repetitions interleave the
 * paths (rotated order). Knobs: `BENCH_PG_REPS` (3), `BENCH_PG_SECONDS`,
 * `BENCH_PG_CONCURRENCY` (`1,64`), `BENCH_PG_ONLY=savers` (only the
 * LangGraph savers: their cells replace the saver cells of the existing
 * file, with their own date and load, and the backend cells stay). Writes
 * `results/postgres.json`, then rebuilds `BENCHMARKS.md` (its PostgreSQL
 * section comes from that file).
 */

const REPS = Number(process.env.BENCH_PG_REPS ?? 3)
const SECONDS = Number(process.env.BENCH_PG_SECONDS ?? 3)
const CONCURRENCY = (process.env.BENCH_PG_CONCURRENCY ?? '1,64').split(',').map(Number)
const ONLY_SAVERS = process.env.BENCH_PG_ONLY === 'savers'
const POOL = 16
const KEYS = 256
const VALUE = new Uint8Array(1024).fill(7)

type Op = (worker: number, i: number) => Promise<unknown>
interface Path {
  readonly name: string
  readonly ops: Partial<Record<Workload, Op>>
}
type Workload = 'put-1KiB' | 'get-1KiB' | 'cas' | LangGraphWorkload

const key = (worker: number, i: number) => `bench/${(worker * 7919 + i) % KEYS}`

async function agentStatePath(url: string): Promise<Path & { backend: Backend }> {
  const backend = createPostgresBackend({
    connectionString: url,
    namespace: 'bench',
    poolSize: POOL,
  })
  for (let k = 0; k < KEYS; k++) await backend.put(`bench/${k}`, VALUE)
  // Per-worker keys for compare-and-set: each caller owns its key, so no race retries are timed.
  const versions = new Map<string, string>()
  return {
    name: 'agent-state',
    backend,
    ops: {
      'put-1KiB': (w, i) => backend.put(key(w, i), VALUE),
      'get-1KiB': (w, i) => backend.get(key(w, i)),
      cas: async (w) => {
        const k = `cas/${w}`
        let version = versions.get(k)
        if (version === undefined) {
          version = (await backend.put(k, VALUE)).version
        }
        versions.set(k, (await backend.put(k, VALUE, { ifMatch: version })).version)
      },
    },
  }
}

async function rawSamePath(url: string): Promise<Path & { pool: pg.Pool }> {
  const pool = new pg.Pool({ connectionString: url, max: POOL })
  // The backend's own SQL (its one write statement, its read), without its change hint.
  const sql = buildStatements('agent_state')
  const put = sql.put({ fenced: false, ifMatch: false, ifNoneMatch: false })
  const cas = sql.put({ fenced: false, ifMatch: true, ifNoneMatch: false })
  const value = Buffer.from(VALUE)
  const params = (k: string) => ['raw', k, 'abcdefghABCDEFGH', null, 1024, value, 0]
  const versions = new Map<string, string>()
  // Rows in their own namespace, created by the backend so the layout is the same.
  const seed = createPostgresBackend({ connectionString: url, namespace: 'raw', poolSize: 4 })
  for (let k = 0; k < KEYS; k++) await seed.put(`bench/${k}`, VALUE)
  for (let w = 0; w < 64; w++) versions.set(`cas/${w}`, (await seed.put(`cas/${w}`, VALUE)).version)
  await seed.close()
  return {
    name: 'raw-same',
    pool,
    ops: {
      'put-1KiB': (w, i) => pool.query(put, params(key(w, i))),
      'get-1KiB': (w, i) => pool.query(sql.readWithValue, ['raw', key(w, i)]),
      cas: async (w) => {
        const k = `cas/${w}`
        const result = await pool.query(cas, [...params(k), versions.get(k)])
        versions.set(k, result.rows[0].written_version)
      },
    },
  }
}

async function rawUpsertPath(url: string): Promise<Path & { pool: pg.Pool }> {
  const pool = new pg.Pool({ connectionString: url, max: POOL })
  await pool.query(
    'CREATE TABLE IF NOT EXISTS bench_upsert (key text COLLATE "C" PRIMARY KEY, value bytea NOT NULL)',
  )
  const value = Buffer.from(VALUE)
  const upsert = (k: string) =>
    pool.query(
      'INSERT INTO bench_upsert (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [k, value],
    )
  for (let k = 0; k < KEYS; k++) await upsert(`bench/${k}`)
  return {
    name: 'raw-upsert',
    pool,
    ops: {
      'put-1KiB': (w, i) => upsert(key(w, i)),
      'get-1KiB': (w, i) =>
        pool.query('SELECT value FROM bench_upsert WHERE key = $1', [key(w, i)]),
    },
  }
}

async function keyvPath(url: string): Promise<Path & { keyv: Keyv }> {
  const keyv = new Keyv({ store: new KeyvPostgres({ uri: url, table: 'bench_keyv', max: POOL }) })
  const text = Buffer.from(VALUE).toString('base64')
  for (let k = 0; k < KEYS; k++) await keyv.set(`bench/${k}`, text)
  return {
    name: 'keyv',
    keyv,
    ops: {
      'put-1KiB': (w, i) => keyv.set(key(w, i), text),
      'get-1KiB': (w, i) => keyv.get(key(w, i)),
    },
  }
}

interface Cell {
  readonly path: string
  readonly workload: Workload
  readonly concurrency: number
  readonly opsPerSecond: number[]
  readonly p50Ms: number[]
}

async function run(op: Op, concurrency: number): Promise<{ opsPerSecond: number; p50Ms: number }> {
  const latencies: number[] = []
  const until = performance.now() + SECONDS * 1000
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      await new Promise((resolve) => setImmediate(resolve))
      for (let i = 0; performance.now() < until; i++) {
        const t = performance.now()
        await op(worker, i)
        latencies.push(performance.now() - t)
      }
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  latencies.sort((a, b) => a - b)
  return {
    opsPerSecond: latencies.length / elapsed,
    p50Ms: latencies[Math.floor(latencies.length / 2)] ?? Number.NaN,
  }
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

/** Measures every path that has each workload, at every concurrency, repetitions interleaved. */
async function measure(
  paths: readonly Path[],
  workloads: readonly Workload[],
  cells: Cell[],
): Promise<void> {
  for (const workload of workloads) {
    for (const concurrency of CONCURRENCY) {
      const here = paths.filter((path) => path.ops[workload] !== undefined)
      const results = new Map(
        here.map((path) => [path.name, { ops: [] as number[], p50: [] as number[] }]),
      )
      for (const path of here) await run(path.ops[workload] as Op, concurrency) // warm-up
      for (let rep = 0; rep < REPS; rep++) {
        for (let j = 0; j < here.length; j++) {
          const path = here[(rep + j) % here.length] as Path
          ;(globalThis as { gc?: () => void }).gc?.()
          const { opsPerSecond, p50Ms } = await run(path.ops[workload] as Op, concurrency)
          const slot = results.get(path.name) as { ops: number[]; p50: number[] }
          slot.ops.push(opsPerSecond)
          slot.p50.push(p50Ms)
        }
      }
      for (const [path, { ops, p50 }] of results) {
        cells.push({ path, workload, concurrency, opsPerSecond: ops, p50Ms: p50 })
        console.log(
          `${workload.padEnd(11)} c=${String(concurrency).padEnd(3)} ${path.padEnd(17)} ${median(ops).toFixed(0).padStart(7)} ops/s  p50 ${median(p50).toFixed(3)} ms`,
        )
      }
    }
  }
}

const loadAtStart = loadavg()
const server = await startPostgresServer({ settings: { max_connections: '400' } })
try {
  const paths: Path[] = ONLY_SAVERS
    ? []
    : [
        await agentStatePath(server.url),
        await rawSamePath(server.url),
        await rawUpsertPath(server.url),
        await keyvPath(server.url),
      ]
  const cells: Cell[] = []
  await measure(paths, ['put-1KiB', 'get-1KiB', 'cas'], cells)
  const savers = await langGraphPaths(server.url, Math.max(...CONCURRENCY), POOL)
  await measure(savers, ['lg-put', 'lg-getTuple', 'lg-list'], cells)
  for (const saver of savers) await saver.close()
  const resultsDir = join(import.meta.dirname, '..', 'results')
  const out = join(resultsDir, 'postgres.json')
  const run = { date: new Date().toISOString(), loadAvg: { start: loadAtStart, end: loadavg() } }
  const previous = readPostgresResults(resultsDir)
  const results: PostgresResults =
    ONLY_SAVERS && previous !== undefined
      ? {
          ...previous,
          savers: { ...run, reps: REPS, seconds: SECONDS },
          cells: [...previous.cells.filter((cell) => !cell.workload.startsWith('lg-')), ...cells],
        }
      : { ...run, reps: REPS, seconds: SECONDS, pool: POOL, cpus: cpus().length, cells }
  writeFileSync(out, `${JSON.stringify(results, null, 2)}\n`)
  console.log(`written ${out}`)
  console.log(`rebuilt ${rebuildReports().join(', ')}`)
  for (const path of paths) {
    const closable = path as Partial<{ backend: Backend; pool: pg.Pool; keyv: Keyv }>
    await closable.backend?.close()
    await closable.pool?.end()
    await closable.keyv?.disconnect()
  }
} finally {
  // @keyv/postgres keeps its own pool, which has no 'error' listener: its idle
  // connections report the server's shutdown as an uncaught 57P01. Nothing is measured any more.
  process.on('uncaughtException', (error) => {
    if ((error as { code?: string }).code !== '57P01') throw error
  })
  await server.stop()
}
