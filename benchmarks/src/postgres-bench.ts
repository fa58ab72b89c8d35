import { writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import KeyvPostgres from '@keyv/postgres'
import Keyv from 'keyv'
import pg from 'pg'
import { applyCoreLayout, coreLayout } from './cores.js'
import { langGraphPaths } from './postgres-langgraph.js'
import {
  agentStatePath,
  type Cell,
  CONCURRENCY,
  KEYS,
  key,
  measure,
  type Path,
  REPS,
  rawSamePath,
  SECONDS,
  VALUE,
} from './postgres-paths.js'
import { type PostgresResults, readPostgresResults, resultsFileOf } from './report/postgres.js'
import { rebuildReports } from './report/rebuild.js'
import { flushDelayMs, hasFlushDelay, withFlushDelay } from './slow-flush.js'

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
 * file, with their own date and load, and the backend cells stay),
 * `BENCH_PG_CORES` (`shared`, or `split`: the server on a core of its own,
 * see cores.ts), `BENCH_PG_FLUSH_MS` (0, or the milliseconds each of the
 * server's flushes waits first: a slower disk, see slow-flush.ts). Writes
 * `results/postgres.json`, or for other conditions `results/postgres-<split,
 * flush-<ms>ms>.json` (`resultsFileOf`), then rebuilds `BENCHMARKS.md` (its
 * PostgreSQL section comes from those files).
 */

const ONLY_SAVERS = process.env.BENCH_PG_ONLY === 'savers'
const LAYOUT = coreLayout()
const FLUSH_MS = flushDelayMs()
const RESULTS_FILE = resultsFileOf({ split: LAYOUT === 'split', flushMs: FLUSH_MS })
const POOL = 16
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

/** `results` without what `readPostgresResults` attaches from other files (trips, other runs). */
function ownRun(results: PostgresResults): PostgresResults {
  const { trips: _trips, variants: _variants, ...rest } = results
  return rest
}

const loadAtStart = loadavg()
const server = await withFlushDelay(FLUSH_MS, () =>
  startPostgresServer({ settings: { max_connections: '400' } }),
)
try {
  if (FLUSH_MS > 0 && !hasFlushDelay(server.pid)) {
    throw new Error(`BENCH_PG_FLUSH_MS: the server (pid ${server.pid}) did not load the delay`)
  }
  const cores = applyCoreLayout(LAYOUT, server.pid)
  console.log(`bench:postgres: ${cores}, flushes delayed ${FLUSH_MS} ms, into ${RESULTS_FILE}`)
  const paths: Path[] = ONLY_SAVERS
    ? []
    : [
        await agentStatePath(server.url, POOL),
        await rawSamePath(server.url, POOL),
        await rawUpsertPath(server.url),
        await keyvPath(server.url),
      ]
  const cells: Cell[] = []
  await measure(paths, ['put-1KiB', 'get-1KiB', 'cas'], cells)
  const savers = await langGraphPaths(server.url, Math.max(...CONCURRENCY), POOL)
  await measure(savers, ['lg-put', 'lg-getTuple', 'lg-list'], cells)
  for (const saver of savers) await saver.close()
  const resultsDir = join(import.meta.dirname, '..', 'results')
  const out = join(resultsDir, RESULTS_FILE)
  const run = {
    date: new Date().toISOString(),
    loadAvg: { start: loadAtStart, end: loadavg() },
    ...(LAYOUT === 'split' ? { cores } : {}),
    ...(FLUSH_MS > 0 ? { flushMs: FLUSH_MS } : {}),
  }
  const read = readPostgresResults(resultsDir, RESULTS_FILE)
  // Without the round-trip counts and the other runs, which live in files of their own.
  const previous = read === undefined ? undefined : ownRun(read)
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
