import { loadavg } from 'node:os'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { declareAnswer } from '../../packages/backend-postgres/src/answer-check.js'
import { createWithHooks } from '../../packages/backend-postgres/src/postgres-backend.js'
import { treeCpuSeconds } from '../../test-suites/services/src/process-cpu.js'
import { applyCoreLayout, coreLayout } from './cores.js'
import { langGraphPaths } from './postgres-langgraph.js'
import {
  agentStatePath,
  median,
  type Op,
  type Path,
  REPS,
  rawSamePath,
  run,
  seededWriteOps,
} from './postgres-paths.js'

/**
 * Where the CPU of a PostgreSQL write goes at c=64 (issue 31, the c=64 write
 * cells of `bench:postgres`). On this 2-vCPU host the client and the server
 * share the cores, and at c=64 both paths keep them busy, so the throughput
 * ratio is the ratio of the CPU each operation costs, client and server
 * together. Paths, interleaved in one process on one private PostgreSQL 15,
 * pools of 16:
 * - `agent-state`: `createPostgresBackend`, as in `bench:postgres`;
 * - `agent-state, hints notify nothing`: the same backend whose change hints
 *   are sent as before but are a bare `SELECT` (no `pg_notify`, no
 *   transaction id): what `NOTIFY` itself costs;
 * - `raw-same`: `pg` sending the backend's write statement alone.
 * Per path and workload (`put-1KiB`, `cas`) at `BENCH_PG_CPU_CONCURRENCY`
 * (default 64): ops/s, p50, the client's CPU per operation (this process),
 * the server's (the postmaster and its children, `/proc`), their sum, and the
 * statements sent per operation (counted on `pg.Client.prototype.query`),
 * medians over `BENCH_PG_REPS` rounds of `BENCH_PG_SECONDS`. Then the same
 * for the LangGraph savers of `bench:postgres` (ours plain and owned,
 * PostgresSaver) on `lg-getTuple` and `lg-put`. `BENCH_PG_CORES=split`: the
 * server on a core of its own (cores.ts).
 * `npx -y pnpm@12.4.2 bench:postgres-cpu`.
 */

const CONCURRENCY = Number(process.env.BENCH_PG_CPU_CONCURRENCY ?? 64)
const POOL = 16
const WORKLOADS = ['put-1KiB', 'cas'] as const
const SAVER_WORKLOADS = ['lg-getTuple', 'lg-put'] as const

let statements = 0
const query = pg.Client.prototype.query
pg.Client.prototype.query = function counted(this: pg.Client, ...args: unknown[]) {
  statements++
  return (query as (...a: unknown[]) => unknown).apply(this, args)
} as typeof query

const loadAtStart = loadavg()
const layout = coreLayout()
const server = await startPostgresServer({ settings: { max_connections: '200' } })
try {
  const cores = applyCoreLayout(layout, server.pid)
  // The hint statements with their answers' columns, notifying nothing.
  const silent = createWithHooks(
    { connectionString: server.url, namespace: 'silent', poolSize: POOL },
    {
      statements: (built) => ({
        ...built,
        announce: declareAnswer(
          'SELECT NULL::text AS set_config, NULL::text AS pg_notify WHERE $1::text || $2::text IS NOT NULL',
          ['set_config', 'pg_notify'],
        ),
        announceKeys: declareAnswer(
          'SELECT NULL::text AS set_config, NULL::text AS pg_notify WHERE $1::text IS NOT NULL AND $2::text[] IS NOT NULL',
          ['set_config', 'pg_notify'],
        ),
      }),
    },
  )
  const silentPath: Path = {
    name: 'agent-state, hints notify nothing',
    ops: await seededWriteOps(silent),
  }
  const agentState = await agentStatePath(server.url, POOL)
  const rawSame = await rawSamePath(server.url, POOL)
  const paths: Path[] = [agentState, silentPath, rawSame]
  // Warm every pooled connection of every path (plans, catalog caches) and the CAS keys' versions.
  for (const path of paths)
    for (const workload of WORKLOADS) await run(path.ops[workload] as Op, CONCURRENCY)

  console.log(
    `bench:postgres-cpu ${new Date().toISOString()}, c=${CONCURRENCY}, pools of ${POOL}, ${REPS} rounds, ${cores}, load ${loadAtStart.map((l) => l.toFixed(1)).join('/')}`,
  )
  console.log(
    '| workload | path | ops/s | p50 ms | client µs/op | server µs/op | total µs/op | statements/op | cores busy |',
  )
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  await account(paths, WORKLOADS)
  const savers = await langGraphPaths(server.url, CONCURRENCY, POOL)
  for (const saver of savers)
    for (const workload of SAVER_WORKLOADS) await run(saver.ops[workload], CONCURRENCY)
  await account(savers, SAVER_WORKLOADS)
  for (const saver of savers) await saver.close()
  console.log(
    `load at the end ${loadavg()
      .map((l) => l.toFixed(1))
      .join('/')}`,
  )
  await silent.close()
  await agentState.backend.close()
  await rawSame.pool.end()
} finally {
  await server.stop()
}

/** One path's figures in one round, per operation where it says so. */
interface Figures {
  readonly opsPerSecond: number
  readonly p50Ms: number
  readonly clientUsPerOp: number
  readonly serverUsPerOp: number
  readonly totalUsPerOp: number
  readonly statementsPerOp: number
  /** Client and server CPU seconds per second of the round. */
  readonly coresBusy: number
}

/** Each figure's median over the rounds. */
function medians(rounds: readonly Figures[]): Figures {
  const of = (field: keyof Figures) => median(rounds.map((round) => round[field]))
  return {
    opsPerSecond: of('opsPerSecond'),
    p50Ms: of('p50Ms'),
    clientUsPerOp: of('clientUsPerOp'),
    serverUsPerOp: of('serverUsPerOp'),
    totalUsPerOp: of('totalUsPerOp'),
    statementsPerOp: of('statementsPerOp'),
    coresBusy: of('coresBusy'),
  }
}

/** Measures `paths` on `workloads` (interleaved, order reversed every other round); prints a row per cell. */
async function account<W extends string>(
  paths: readonly { readonly name: string; readonly ops: Partial<Record<W, Op>> }[],
  workloads: readonly W[],
): Promise<void> {
  for (const workload of workloads) {
    const rounds = new Map<string, Figures[]>()
    for (let rep = 0; rep < REPS; rep++) {
      const order = rep % 2 === 0 ? paths : [...paths].reverse()
      for (const path of order) {
        const op = path.ops[workload] as Op
        let count = 0
        const counting: Op = (w, i) => {
          count++
          return op(w, i)
        }
        statements = 0
        const clientBefore = process.cpuUsage()
        const serverBefore = treeCpuSeconds(server.pid)
        const started = performance.now()
        const result = await run(counting, CONCURRENCY)
        const seconds = (performance.now() - started) / 1000
        const clientUsed = process.cpuUsage(clientBefore)
        const clientUs = clientUsed.user + clientUsed.system
        const serverUs = (treeCpuSeconds(server.pid) - serverBefore) * 1e6
        const figures: Figures = {
          opsPerSecond: result.opsPerSecond,
          p50Ms: result.p50Ms,
          clientUsPerOp: clientUs / count,
          serverUsPerOp: serverUs / count,
          totalUsPerOp: (clientUs + serverUs) / count,
          statementsPerOp: statements / count,
          coresBusy: (clientUs + serverUs) / 1e6 / seconds,
        }
        rounds.set(path.name, [...(rounds.get(path.name) ?? []), figures])
      }
    }
    for (const path of paths) {
      const cell = medians(rounds.get(path.name) ?? [])
      console.log(
        `| ${workload} | ${path.name} | ${cell.opsPerSecond.toFixed(0)} | ${cell.p50Ms.toFixed(2)} | ${cell.clientUsPerOp.toFixed(1)} | ${cell.serverUsPerOp.toFixed(1)} | ${cell.totalUsPerOp.toFixed(0)} | ${cell.statementsPerOp.toFixed(3)} | ${cell.coresBusy.toFixed(2)} |`,
      )
    }
  }
}
