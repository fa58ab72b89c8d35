import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The PostgreSQL section of `BENCHMARKS.md`, rendered from
 * `results/postgres.json` (written by `bench:postgres`, which measures
 * outside the main run: its own server, its own peers). Every figure is a
 * median over the interleaved repetitions; a ratio is computed within each
 * repetition (both paths measured side by side), then its median is taken.
 */

/** One path, workload and concurrency of `results/postgres.json`: one value per repetition. */
export interface PostgresCell {
  readonly path: string
  readonly workload: string
  readonly concurrency: number
  readonly opsPerSecond: readonly number[]
  readonly p50Ms: readonly number[]
}

/** `results/postgres.json`. */
export interface PostgresResults {
  readonly date: string
  readonly reps: number
  readonly seconds: number
  readonly pool: number
  /** `os.loadavg()` at the start and the end of the run (absent in older files). */
  readonly loadAvg?: { readonly start: readonly number[]; readonly end: readonly number[] }
  readonly cpus?: number
  /** When the saver cells were measured apart (`BENCH_PG_ONLY=savers`): that run's date, load and repetitions. */
  readonly savers?: {
    readonly date: string
    readonly loadAvg: { readonly start: readonly number[]; readonly end: readonly number[] }
    readonly reps: number
    readonly seconds: number
  }
  readonly cells: readonly PostgresCell[]
  /** How client and server shared the cores, for a run with `BENCH_PG_CORES=split` (cores.ts). */
  readonly cores?: string
  /** The delay before each flush, for a run with `BENCH_PG_FLUSH_MS` (slow-flush.ts). */
  readonly flushMs?: number
  /** `results/postgres-trips.json` (`bench:postgres-trips`), when it was written. */
  readonly trips?: PostgresTrips
  /** The runs under other conditions (`results/postgres-<variant>.json`), each rendered apart. */
  readonly variants?: readonly PostgresResults[]
}

/** Under which conditions a run was measured, beyond the default (see {@link resultsFileOf}). */
export interface PostgresConditions {
  /** `BENCH_PG_CORES=split`. */
  readonly split: boolean
  /** `BENCH_PG_FLUSH_MS` (0: none). */
  readonly flushMs: number
}

/**
 * The file a run under `conditions` is written to: `postgres.json` for the
 * default, else `postgres-split.json`, `postgres-flush-<ms>ms.json` or
 * `postgres-split-flush-<ms>ms.json`.
 */
export function resultsFileOf(conditions: PostgresConditions): string {
  const parts = [
    ...(conditions.split ? ['split'] : []),
    ...(conditions.flushMs > 0 ? [`flush-${conditions.flushMs}ms`] : []),
  ]
  return parts.length === 0 ? 'postgres.json' : `postgres-${parts.join('-')}.json`
}

const VARIANT_FILE = /^postgres-(split|flush-[\d.]+ms|split-flush-[\d.]+ms)\.json$/

/** What one operation of each path sends, counted by `bench:postgres-trips` (means over its operations). */
export interface PostgresTrips {
  readonly date: string
  readonly ops: number
  readonly rows: readonly {
    readonly path: string
    readonly operation: string
    readonly roundTrips: number
    readonly statements: number
    readonly hints: number
    readonly writeTransactions: number
  }[]
}

/**
 * Reads the run in `results/<file>` (default `postgres.json`) from `outDir`,
 * `undefined` when it was never written. The default run comes with what is
 * attached to it: the counts of `postgres-trips.json` and the runs under other
 * conditions (`postgres-<variant>.json`, in file name order).
 */
export function readPostgresResults(
  outDir: string,
  file = 'postgres.json',
): PostgresResults | undefined {
  const path = join(outDir, file)
  if (!existsSync(path)) return undefined
  const results = JSON.parse(readFileSync(path, 'utf8')) as PostgresResults
  if (file !== 'postgres.json') return results
  const tripsPath = join(outDir, 'postgres-trips.json')
  const variants = readdirSync(outDir)
    .filter((name) => VARIANT_FILE.test(name))
    .sort()
    .map((name) => JSON.parse(readFileSync(join(outDir, name), 'utf8')) as PostgresResults)
  return {
    ...results,
    ...(existsSync(tripsPath)
      ? { trips: JSON.parse(readFileSync(tripsPath, 'utf8')) as PostgresTrips }
      : {}),
    ...(variants.length === 0 ? {} : { variants }),
  }
}

const median = (values: readonly number[]): number =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

function cellOf(
  results: PostgresResults,
  path: string,
  workload: string,
  concurrency: number,
): PostgresCell | undefined {
  return results.cells.find(
    (c) => c.path === path && c.workload === workload && c.concurrency === concurrency,
  )
}

function shown(cell: PostgresCell | undefined): string {
  if (cell === undefined) return '–'
  const p50 = median(cell.p50Ms)
  return `${median(cell.opsPerSecond).toFixed(0)} ops/s, p50 ${p50 < 10 ? p50.toFixed(2) : p50.toFixed(1)} ms`
}

/** Median over the repetitions of `a`'s p50 divided by `b`'s p50 in the same repetition. */
function p50Ratio(a: PostgresCell | undefined, b: PostgresCell | undefined): string {
  if (a === undefined || b === undefined) return '–'
  const ratios = a.p50Ms.map((p50, rep) => p50 / (b.p50Ms[rep] ?? Number.NaN))
  return `${median(ratios).toFixed(2)}×`
}

function concurrencies(results: PostgresResults, workloads: readonly string[]): number[] {
  return [
    ...new Set(
      results.cells.filter((c) => workloads.includes(c.workload)).map((c) => c.concurrency),
    ),
  ].sort((a, b) => a - b)
}

function table(
  results: PostgresResults,
  workloads: readonly string[],
  paths: readonly string[],
  ratios: ReadonlyArray<readonly [string, string]>,
): string[] {
  const lines = [
    `| workload | c | ${[...paths, ...ratios.map(([a, b]) => `p50 ${a} / ${b}`)].join(' | ')} |`,
    `| --- | --- | ${[...paths, ...ratios].map(() => '---').join(' | ')} |`,
  ]
  for (const workload of workloads) {
    for (const c of concurrencies(results, workloads)) {
      const cells = paths.map((path) => shown(cellOf(results, path, workload, c)))
      const quoted = ratios.map(([a, b]) =>
        p50Ratio(cellOf(results, a, workload, c), cellOf(results, b, workload, c)),
      )
      lines.push(`| ${workload} | ${c} | ${[...cells, ...quoted].join(' | ')} |`)
    }
  }
  return lines
}

/** c=64 over c=1 throughput of `path` for `workload` (medians), as quoted under the table. */
function scaling(results: PostgresResults, path: string, workload: string): string {
  const levels = concurrencies(results, [workload])
  const low = cellOf(results, path, workload, levels[0] ?? 1)
  const high = cellOf(results, path, workload, levels[levels.length - 1] ?? 1)
  if (low === undefined || high === undefined || low === high) return '–'
  return `${(median(high.opsPerSecond) / median(low.opsPerSecond)).toFixed(1)}×`
}

/** The `## PostgreSQL` section of `BENCHMARKS.md`. */
export function renderPostgresSection(results: PostgresResults): string[] {
  const loadOf = (loadAvg: PostgresResults['loadAvg']): string =>
    loadAvg === undefined
      ? ''
      : `; load average ${loadAvg.start.map((n) => n.toFixed(1)).join('/')} at the start, ${loadAvg.end.map((n) => n.toFixed(1)).join('/')} at the end`
  const load = loadOf(results.loadAvg)
  const saversRun =
    results.savers === undefined
      ? []
      : [
          `Measured apart (\`BENCH_PG_ONLY=savers npx -y pnpm@12.4.2 bench:postgres\`) on ${results.savers.date}: ${results.savers.reps}`,
          `interleaved repetitions of ${results.savers.seconds} s per path${loadOf(results.savers.loadAvg)}.`,
          '',
        ]
  return [
    '## PostgreSQL (`bench:postgres`)',
    '',
    `Measured by \`npx -y pnpm@12.4.2 bench:postgres\` (\`benchmarks/src/postgres-bench.ts\`) on ${results.date}: one private`,
    `PostgreSQL 15 (\`fsync\` on, \`synchronous_commit\` on), pools of ${results.pool}, 1 KiB values, closed loop,`,
    `${results.reps} interleaved repetitions of ${results.seconds} s per path${results.cpus === undefined ? '' : `, ${results.cpus} CPUs`}${load}.`,
    'Cells: median ops/s and median p50. Ratios: the p50 of the two paths in the same repetition, median over',
    'the repetitions (lower is better for agent-state). `raw-same` runs the backend’s own statements through `pg`',
    '(`buildStatements`: a write is its one conditional statement, a get its read) without core’s rules, checksum',
    'or decoding, and without the change hint agent-state pipelines behind each write; `raw-upsert` is one',
    '`INSERT … ON CONFLICT DO UPDATE` (last writer wins). Where the time goes, and what stands in the way of each',
    'target: `benchmarks/FINDINGS.md`, PostgreSQL.',
    '',
    ...backendTable(results),
    '',
    scalingLine(results),
    ...(results.variants ?? []).flatMap((variant) => variantSection(variant, loadOf)),
    '',
    '### LangGraph savers on PostgreSQL',
    '',
    '`@agent-state/langgraph` on this backend (plain, and `owned`: thread ownership, every write fenced by the',
    'thread’s lease) against `@langchain/langgraph-checkpoint-postgres`’s `PostgresSaver` (upserts, no fencing)',
    'on the same server. Each caller works on its own thread of 20+ checkpoints: `lg-put` writes a checkpoint',
    'with one 1 KiB channel value, `lg-getTuple` reads the latest, `lg-list` the 10 newest.',
    '',
    ...saversRun,
    ...saverTable(results),
    ...tripsTable(results.trips),
  ]
}

/** The table of the backend's paths (put, get, compare-and-set) with the ratio to raw-same. */
function backendTable(results: PostgresResults): string[] {
  return table(
    results,
    ['put-1KiB', 'get-1KiB', 'cas'],
    ['agent-state', 'raw-same', 'raw-upsert', 'keyv'],
    [['agent-state', 'raw-same']],
  )
}

/** The table of the LangGraph savers with the ratios to PostgresSaver. */
function saverTable(results: PostgresResults): string[] {
  return table(
    results,
    ['lg-put', 'lg-getTuple', 'lg-list'],
    ['agent-state', 'agent-state owned', 'PostgresSaver'],
    [
      ['agent-state', 'PostgresSaver'],
      ['agent-state owned', 'PostgresSaver'],
    ],
  )
}

/** The sentence under a backend table: how `put` throughput scales with the callers. */
function scalingLine(results: PostgresResults): string {
  const levels = concurrencies(results, ['put-1KiB'])
  return `agent-state \`put\` throughput at c=${levels[levels.length - 1] ?? '?'} over c=${levels[0] ?? '?'}: ${scaling(results, 'agent-state', 'put-1KiB')} (raw-same ${scaling(results, 'raw-same', 'put-1KiB')}, raw-upsert ${scaling(results, 'raw-upsert', 'put-1KiB')}).`
}

/** A run under other conditions (`BENCH_PG_CORES=split`, `BENCH_PG_FLUSH_MS`), under its own heading. */
function variantSection(
  variant: PostgresResults,
  loadOf: (loadAvg: PostgresResults['loadAvg']) => string,
): string[] {
  const flushMs = variant.flushMs ?? 0
  const split = variant.cores !== undefined
  const knobs = [
    ...(split ? ['BENCH_PG_CORES=split'] : []),
    ...(flushMs > 0 ? [`BENCH_PG_FLUSH_MS=${flushMs}`] : []),
  ].join(' ')
  const titles = [
    ...(split ? ['The database on a core of its own'] : []),
    ...(flushMs > 0 ? [`${split ? 'a' : 'A'} flush of ${flushMs} ms`] : []),
  ]
  const explained = [
    ...(split
      ? [
          `The server on a core of its own (${variant.cores}; \`benchmarks/src/cores.ts\`). Above, client and server share`,
          'both cores, and at c=64 the client’s CPU is taken from the server; here, as with a database on a machine of',
          'its own, it is not.',
        ]
      : []),
    ...(flushMs > 0
      ? [
          `Each flush of the server waits ${flushMs} ms first (\`benchmarks/native/slow-flush.c\`, preloaded), as on a networked`,
          'volume: a put at c=1 waits on its commit’s flush, and concurrent sessions share one (group commit).',
        ]
      : []),
  ]
  return [
    '',
    `### ${titles.join(', ')} (\`${knobs}\`)`,
    '',
    `The same paths measured by \`${knobs} npx -y pnpm@12.4.2 bench:postgres\` on ${variant.date}, ${variant.reps} interleaved`,
    `repetitions of ${variant.seconds} s per path${loadOf(variant.loadAvg)} (\`benchmarks/README.md\`, knobs).`,
    ...explained,
    '',
    ...backendTable(variant),
    '',
    scalingLine(variant),
    '',
    ...saverTable(variant),
  ]
}

/** The counts of `bench:postgres-trips`, which load does not change. */
function tripsTable(trips: PostgresTrips | undefined): string[] {
  if (trips === undefined) return []
  return [
    '',
    '### What one operation sends (`bench:postgres-trips`)',
    '',
    `Counted on the client by \`npx -y pnpm@12.4.2 bench:postgres-trips\` (\`benchmarks/src/postgres-round-trips.ts\`) on ${trips.date},`,
    `at concurrency 1, mean of ${trips.ops} operations: round trips (statements sent while their connection had none in`,
    'flight), statements, change hints among them, and write transactions (transaction ids the server assigned: each a',
    'commit; a hint’s skips the WAL flush). Load does not change these.',
    '',
    '| path | operation | round trips | statements | hints | write transactions |',
    '| --- | --- | --- | --- | --- | --- |',
    ...trips.rows.map(
      (r) =>
        `| ${r.path} | ${r.operation} | ${r.roundTrips} | ${r.statements} | ${r.hints} | ${r.writeTransactions} |`,
    ),
  ]
}
