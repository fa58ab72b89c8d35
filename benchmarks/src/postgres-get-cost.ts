import { loadavg } from 'node:os'
import { buildStatements, createPostgresBackend } from '@agent-state/postgres'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import {
  assertOwnAnswer,
  declaredAnswer,
} from '../../packages/backend-postgres/src/answer-check.js'
import { createWithHooks } from '../../packages/backend-postgres/src/postgres-backend.js'
import { decodeState, type StateRow } from '../../packages/backend-postgres/src/row-codec.js'
import { closedLoop } from './client-cpu-loop.js'
import { median } from './postgres-paths.js'

/**
 * Where a PostgreSQL `get` at c=64 spends the client's thread
 * (`bench:postgres-get-cost`): client CPU per operation (`process.cpuUsage`)
 * and throughput, `C` (64) callers on pools of 16, paths interleaved over
 * `ROUNDS` rounds (medians), on one private PostgreSQL 15. Every path runs
 * the backend's own read (`readWithValue`), so the server's work is the
 * same; what differs is the client's:
 * - `agent-state get`: the backend (its pool in pipeline mode, checkout,
 *   row decoding with the CRC-32 check, the meta);
 * - `raw-same`: `pg.Pool` running the read (what `bench:postgres` compares with);
 * - `raw-same, pipeline`: the same on a pool in node-postgres' `pipeline`
 *   mode, as the backend's;
 * - `raw-same, query_timeout`: on a pool with the backend's `query_timeout`
 *   (a client-side timer per statement);
 * - `raw-same, backend pool config`: both, and the server-side timeouts as
 *   startup parameters: the backend's pool exactly;
 * - `agent-state get, answers unchecked`: the backend with its answer check
 *   (answer-check.ts) off (a test hook): the check's cost is the difference;
 * then the backend's row decoding alone (`decodeState` with its CRC-32
 * check, no server), and the answer check alone (the declared columns' lookup
 * and the comparison with a real answer's fields), in tight loops. `OPS` (20000) gets per round and
 * path, `ROUNDS` (5).
 */

const OPS = Number(process.env.OPS ?? 20000)
const ROUNDS = Number(process.env.ROUNDS ?? 5)
const C = Number(process.env.C ?? 64)
const POOL = 16
const KEYS = 256

const server = await startPostgresServer({ settings: { max_connections: '200' } })
const backend = createPostgresBackend({
  connectionString: server.url,
  namespace: 'probe',
  poolSize: POOL,
})
const unchecked = createWithHooks(
  { connectionString: server.url, namespace: 'probe', poolSize: POOL },
  { checkAnswers: false },
)
const value = new Uint8Array(1024).fill(7)
for (let i = 0; i < KEYS; i++) await backend.put(`k${i}`, value)
const sql = buildStatements('agent_state')
const pool = (config: Partial<pg.PoolConfig>) => {
  const opened = new pg.Pool({ connectionString: server.url, max: POOL, ...config })
  // An idle connection ended by the server's shutdown must not crash the probe.
  opened.on('error', () => {})
  return opened
}
// The backend's `query_timeout`: `statementTimeoutMs` (5000) + 2000 (connection.ts).
const QUERY_TIMEOUT = 7000
const pools = {
  plain: pool({}),
  pipelined: pool({ pipeline: true } as Partial<pg.PoolConfig>),
  timed: pool({ query_timeout: QUERY_TIMEOUT }),
  // And the server-side timeouts the backend sends as startup parameters (options.ts' defaults).
  backendConfig: pool({
    pipeline: true,
    query_timeout: QUERY_TIMEOUT,
    statement_timeout: 5000,
    lock_timeout: 1000,
    idle_in_transaction_session_timeout: 5000,
  } as Partial<pg.PoolConfig>),
}

const loop = (op: (i: number) => Promise<unknown>) =>
  closedLoop(op, { concurrency: C, ops: OPS, keys: KEYS })

// A row of the read, for the decoding loop after the server is gone.
const answer = await pools.plain.query<StateRow>(sql.readWithValue, ['probe', 'k1'])
const row = answer.rows[0]
const read = (pool: pg.Pool, i: number) =>
  pool.query<StateRow>(sql.readWithValue, ['probe', `k${i}`])
const paths = [
  ['agent-state get', (i: number) => backend.get(`k${i}`)],
  ['agent-state get, answers unchecked', (i: number) => unchecked.get(`k${i}`)],
  ['raw-same', (i: number) => read(pools.plain, i)],
  ['raw-same, pipeline', (i: number) => read(pools.pipelined, i)],
  ['raw-same, query_timeout', (i: number) => read(pools.timed, i)],
  ['raw-same, backend pool config', (i: number) => read(pools.backendConfig, i)],
] as const
const rounds = new Map<string, { usPerOp: number; opsPerSec: number; p50Ms: number }[]>(
  paths.map(([name]) => [name, []]),
)
try {
  for (const [, op] of paths) await loop(op) // warm-up
  for (let round = 0; round < ROUNDS; round++) {
    for (let j = 0; j < paths.length; j++) {
      const [name, op] = paths[(round + j) % paths.length] as (typeof paths)[number]
      rounds.get(name)?.push(await loop(op))
    }
  }
} finally {
  await backend.close()
  await unchecked.close()
  await Promise.all(Object.values(pools).map((p) => p.end()))
  await server.stop()
}
for (const [name, measured] of rounds) {
  const cpu = median(measured.map((m) => m.usPerOp)).toFixed(1)
  const rate = median(measured.map((m) => m.opsPerSec)).toFixed(0)
  const p50 = median(measured.map((m) => m.p50Ms)).toFixed(3)
  console.log(`${name}: client CPU ${cpu} µs per get, ${rate} gets/s, p50 ${p50} ms`)
}
const decodeUs: number[] = []
for (let round = 0; round < ROUNDS; round++) {
  const start = process.cpuUsage()
  for (let i = 0; i < OPS * 10; i++) decodeState('k1', row as StateRow)
  const cpu = process.cpuUsage(start)
  decodeUs.push((cpu.user + cpu.system) / (OPS * 10))
}
console.log(`decodeState alone: client CPU ${median(decodeUs).toFixed(2)} µs per row`)
const checkNs: number[] = []
for (let round = 0; round < ROUNDS; round++) {
  const start = process.cpuUsage()
  for (let i = 0; i < OPS * 10; i++) {
    assertOwnAnswer(answer.fields, declaredAnswer(sql.readWithValue) ?? [])
  }
  const cpu = process.cpuUsage(start)
  checkNs.push(((cpu.user + cpu.system) * 1000) / (OPS * 10))
}
console.log(`answer check alone: client CPU ${median(checkNs).toFixed(0)} ns per answer`)
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
