import { loadavg } from 'node:os'
import { buildStatements } from '@agent-state/postgres'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import {
  putStatement,
  readStatement,
} from '../../packages/backend-postgres/src/schema-functions.js'
import { treeCpuSeconds } from '../../test-suites/services/src/process-cpu.js'
import {
  CONCURRENCY,
  key,
  median,
  type Op,
  REPS,
  run,
  seedNamespace,
  VALUE,
} from './postgres-paths.js'

/**
 * What schema 3's functions save (issue 31, writes and reads at c=1 and c=64).
 * On one private PostgreSQL 15, the raw `pg` client runs the backend's put,
 * compare-and-set and get two ways, interleaved in one process, each on its
 * own pool of 16 configured like the backend's:
 * - `inline`: the function's own statement (`putStatement`, `readStatement`:
 *   what schema 2's backend sent) as an unnamed statement, its parameters
 *   bound in place of the function's: parsed, analysed and planned at every
 *   execution, as before migration 3;
 * - `function`: the call the backend sends now (`buildStatements`), whose
 *   statement's plan each server connection keeps.
 * Per way, workload and concurrency (`BENCH_PG_CONCURRENCY`, `1,64`): ops/s and
 * p50 (medians over `BENCH_PG_REPS` rounds of `BENCH_PG_SECONDS`, the ways'
 * order alternating), and the server's CPU per operation (the postmaster and
 * its children, `/proc`). No change hint, rules or decoding: the statements only.
 */

const POOL = 16
const NAMESPACE = 'raw'
const loadAtStart = loadavg()
const server = await startPostgresServer({ settings: { max_connections: '200' } })

function pool(): pg.Pool {
  const created = new pg.Pool({
    connectionString: server.url,
    max: POOL,
    pipeline: true,
    statement_timeout: 5000,
    lock_timeout: 1000,
  } as pg.PoolConfig)
  created.on('error', () => {})
  return created
}

/** The server's CPU seconds: the postmaster (with its reaped children) and its live children. */
const serverCpu = (): number => treeCpuSeconds(server.pid)

// The backend creates its schema (migration 3 included) and the rows.
const versions = await seedNamespace(server.url, NAMESPACE, Math.max(...CONCURRENCY))

/** The function's statement with its parameters bound by position, as an unnamed statement sends them. */
function inline(form: 'upsert' | 'update', ifMatch: boolean): string {
  const names: Record<string, string> = {
    p_namespace: '$1',
    p_key: '$2',
    p_random: '$3',
    p_writer: '$4::text',
    p_size: '$5::bigint',
    p_value: '$6::bytea',
    p_crc: '$7::bigint',
    p_token: 'NULL::bigint',
    p_if_match: ifMatch ? '$8::text' : 'NULL::text',
    p_if_none_match: 'false',
  }
  return bind(
    putStatement(form, 'agent_state.agent_state_entries', 'agent_state.agent_state_row_versions'),
    names,
  )
}

/** `text` with the function's parameter names replaced by `names`. */
function bind(text: string, names: Record<string, string>): string {
  return text.replace(/\bp_[a-z_]+\b/g, (name) => names[name] ?? name)
}

const sql = buildStatements('agent_state')
const value = Buffer.from(VALUE)
const ways = {
  inline: {
    pool: pool(),
    put: inline('upsert', false),
    cas: inline('update', true),
    get: bind(readStatement(true, 'agent_state.agent_state_entries'), {
      p_namespace: '$1',
      p_key: '$2',
    }),
  },
  function: {
    pool: pool(),
    put: sql.put({ fenced: false, ifMatch: false, ifNoneMatch: false }),
    cas: sql.put({ fenced: false, ifMatch: true, ifNoneMatch: false }),
    get: sql.readWithValue,
  },
}
type Way = keyof typeof ways

function ops(way: Way): Record<'put' | 'cas' | 'get', Op> {
  const { pool: client, put, cas, get } = ways[way]
  const params = (k: string) => [NAMESPACE, k, 'abcdefghABCDEFGH', null, 1024, value, 0]
  return {
    put: (worker, i) => client.query(put, params(key(worker, i))),
    get: (worker, i) => client.query(get, [NAMESPACE, key(worker, i)]),
    cas: async (worker) => {
      const k = `cas/${worker}`
      const { rows } = await client.query<{ written_version: string | null; version: string }>(
        cas,
        [...params(k), versions.get(k)],
      )
      const row = rows[0]
      if (row?.written_version == null) throw new Error(`cas of ${k} refused`)
      versions.set(k, row.written_version)
    },
  }
}

// Both ways equal: the same answer for the same write (the inline statement is the function's own).
for (const way of ['inline', 'function'] as const) await ops(way).put(0, 0)
// Warm every pooled connection of both ways (the function's plans, the catalog caches).
for (const way of ['inline', 'function'] as const) {
  await run(ops(way).put, 64)
  await run(ops(way).get, 64)
}

const rows: string[] = []
for (const workload of ['put', 'cas', 'get'] as const) {
  for (const concurrency of CONCURRENCY) {
    const cells = new Map<Way, { ops: number[]; p50: number[]; cpu: number[] }>()
    for (let rep = 0; rep < REPS; rep++) {
      const order: Way[] = rep % 2 === 0 ? ['inline', 'function'] : ['function', 'inline']
      for (const way of order) {
        const before = serverCpu()
        const result = await run(ops(way)[workload], concurrency)
        const cpu = serverCpu() - before
        const cell = cells.get(way) ?? { ops: [], p50: [], cpu: [] }
        cell.ops.push(result.opsPerSecond)
        cell.p50.push(result.p50Ms)
        cell.cpu.push(
          (cpu / (result.opsPerSecond * Number(process.env.BENCH_PG_SECONDS ?? 3))) * 1e6,
        )
        cells.set(way, cell)
      }
    }
    const show = (way: Way) => {
      const cell = cells.get(way)
      if (cell === undefined) return '–'
      return `${median(cell.ops).toFixed(0)} ops/s, p50 ${median(cell.p50).toFixed(3)} ms, server ${median(cell.cpu).toFixed(0)} µs/op`
    }
    const ratio = median(cells.get('function')?.ops ?? []) / median(cells.get('inline')?.ops ?? [])
    rows.push(
      `| ${workload} | ${concurrency} | ${show('inline')} | ${show('function')} | ${ratio.toFixed(2)}× |`,
    )
  }
}
const loadAtEnd = loadavg()
console.log(
  `bench:postgres-functions ${new Date().toISOString()}, ${REPS} rounds, load ${loadAtStart.map((l) => l.toFixed(1)).join('/')} → ${loadAtEnd.map((l) => l.toFixed(1)).join('/')}`,
)
console.log(
  '| workload | c | inline (schema 2) | function (schema 3) | throughput function / inline |',
)
console.log('| --- | --- | --- | --- | --- |')
for (const row of rows) console.log(row)
await ways.inline.pool.end()
await ways.function.pool.end()
await server.stop()
