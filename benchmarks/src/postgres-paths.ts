import type { Backend } from '@agent-state/core'
import { buildStatements, createPostgresBackend } from '@agent-state/postgres'
import pg from 'pg'
import type { LangGraphWorkload } from './postgres-langgraph.js'

/**
 * The agent-state and raw-same paths of `bench:postgres`, shared with
 * `postgres-round-trips.ts` (which counts what each operation sends).
 */

/** Keys the put and get workloads spread over. */
export const KEYS = 256
/** The value every write stores (1 KiB). */
export const VALUE = new Uint8Array(1024).fill(7)

/** One operation of a caller (`worker`), its `i`th. */
export type Op = (worker: number, i: number) => Promise<unknown>
/** A way of doing the workloads (agent-state, the raw client, a peer). */
export interface Path {
  readonly name: string
  readonly ops: Partial<Record<Workload, Op>>
}
/** What is measured. */
export type Workload = 'put-1KiB' | 'get-1KiB' | 'cas' | LangGraphWorkload

/** The key of a caller's `i`th put or get. */
export const key = (worker: number, i: number) => `bench/${(worker * 7919 + i) % KEYS}`

/**
 * `createPostgresBackend` (its change hint pipelined behind each write), keys
 * seeded; in `schema` (the default one unless given), named `name`.
 */
export async function agentStatePath(
  url: string,
  pool: number,
  schema?: string,
  name = 'agent-state',
): Promise<Path & { backend: Backend }> {
  const backend = createPostgresBackend({
    connectionString: url,
    namespace: 'bench',
    poolSize: pool,
    ...(schema === undefined ? {} : { schema }),
  })
  for (let k = 0; k < KEYS; k++) await backend.put(`bench/${k}`, VALUE)
  // Per-worker keys for compare-and-set: each caller owns its key, so no race retries are timed.
  const versions = new Map<string, string>()
  return {
    name,
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

/**
 * A backend's put and compare-and-set workloads, its keys seeded first (the
 * side benches' variants of the backend: a hook changed, the rest as
 * {@link agentStatePath}). Each caller compare-and-sets its own key.
 */
export async function seededWriteOps(backend: Backend): Promise<Path['ops']> {
  for (let k = 0; k < KEYS; k++) await backend.put(`bench/${k}`, VALUE)
  const versions = new Map<string, string>()
  return {
    'put-1KiB': (w, i) => backend.put(key(w, i), VALUE),
    cas: async (w) => {
      const k = `cas/${w}`
      const version = versions.get(k) ?? (await backend.put(k, VALUE)).version
      versions.set(k, (await backend.put(k, VALUE, { ifMatch: version })).version)
    },
  }
}

/**
 * Writes `namespace`'s rows through the backend (so their layout is its own,
 * migrations included): the put and get workloads' keys, and the compare-and-set
 * key of each of `callers`, whose versions it resolves (`cas/<caller>`).
 */
export async function seedNamespace(
  url: string,
  namespace: string,
  callers: number,
): Promise<Map<string, string>> {
  const seed = createPostgresBackend({ connectionString: url, namespace, poolSize: 4 })
  try {
    for (let k = 0; k < KEYS; k++) await seed.put(`bench/${k}`, VALUE)
    const versions = new Map<string, string>()
    for (let w = 0; w < callers; w++) {
      versions.set(`cas/${w}`, (await seed.put(`cas/${w}`, VALUE)).version)
    }
    return versions
  } finally {
    await seed.close()
  }
}

/** `pg` running the backend's own statements, without hint, rules, checksum or decoding. */
export async function rawSamePath(url: string, size: number): Promise<Path & { pool: pg.Pool }> {
  const pool = new pg.Pool({ connectionString: url, max: size })
  // The server's shutdown ends the idle connections the pool is still closing: not a crash.
  pool.on('error', () => {})
  // The backend's own SQL (its one write statement, its read), without its change hint.
  const sql = buildStatements('agent_state')
  const put = sql.put({ fenced: false, ifMatch: false, ifNoneMatch: false })
  const cas = sql.put({ fenced: false, ifMatch: true, ifNoneMatch: false })
  const value = Buffer.from(VALUE)
  const params = (k: string) => ['raw', k, 'abcdefghABCDEFGH', null, 1024, value, 0]
  // Rows in their own namespace, created by the backend so the layout is the same.
  const versions = await seedNamespace(url, 'raw', 64)
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

/** Callers (`BENCH_PG_CONCURRENCY`). */
export const CONCURRENCY = (process.env.BENCH_PG_CONCURRENCY ?? '1,64').split(',').map(Number)
/** Seconds per path and repetition (`BENCH_PG_SECONDS`). */
export const SECONDS = Number(process.env.BENCH_PG_SECONDS ?? 3)
/** Interleaved repetitions (`BENCH_PG_REPS`). */
export const REPS = Number(process.env.BENCH_PG_REPS ?? 3)
/** The figures of one path on one workload and concurrency, one per repetition. */
export interface Cell {
  readonly path: string
  readonly workload: Workload
  readonly concurrency: number
  readonly opsPerSecond: number[]
  readonly p50Ms: number[]
}

/** Runs `op` in a closed loop with `concurrency` callers for `SECONDS`. */
export async function run(
  op: Op,
  concurrency: number,
): Promise<{ opsPerSecond: number; p50Ms: number }> {
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

/** The median. */
export const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

/** Measures every path that has each workload, at every concurrency, repetitions interleaved. */
export async function measure(
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
