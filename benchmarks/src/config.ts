import type { BackendKind, PathKind } from './subject.js'

/** Every knob of a benchmark run; `readConfig` fills it from `BENCH_*` environment variables. */
export interface BenchConfig {
  /** Backends to run, in order. `BENCH_BACKENDS=memory,fs,sqlite,redis,s3`. */
  readonly backends: readonly BackendKind[]
  /** Only these paths (for profiling one of them). `BENCH_PATHS=agent-state,raw`; default all. */
  readonly paths: readonly PathKind[] | undefined
  /** Only workloads whose id matches. `BENCH_ONLY` (a regular expression). */
  readonly only: RegExp | undefined
  /** Timed repetitions per path and case. `BENCH_REPS`, default 5. */
  readonly reps: number
  /**
   * Full runs of every headline case (set-up, warm-up and `reps` timed
   * repetitions each, spread over the whole benchmark): a headline cell is the
   * median over the runs with its min–max. `BENCH_RUNS`, default 3.
   */
  readonly runs: number
  /** Workloads run `runs` times; the others run once. `BENCH_HEADLINE`, default `^(put-1KiB|cas|get-1KiB)$`. */
  readonly headline: RegExp
  /** Free text about the host recorded with the machine (for example "shared with 6 other jobs"). `BENCH_HOST_NOTE`. */
  readonly hostNote: string | undefined
  /** Length of one repetition, in ms. `BENCH_REP_MS`, default 200. */
  readonly repMs: number
  /** Untimed warm-up per path and case, in ms. `BENCH_WARMUP_MS`, default 100. */
  readonly warmupMs: number
  /** S3 is ~100x slower per operation; its repetitions are this long. `BENCH_S3_REP_MS`, default 400. */
  readonly s3RepMs: number
  /** Concurrency levels of the point workloads. `BENCH_CONCURRENCY`, default `1,64`. */
  readonly concurrencies: readonly number[]
  /** Value sizes of the value-size scaling (put and get). `BENCH_VALUE_SIZES`, default 1 KiB, 64 KiB, 1 MiB. */
  readonly valueSizes: readonly number[]
  /** Concurrency levels of the value-size scaling. `BENCH_SIZE_CONCURRENCY`, default `1`. */
  readonly sizeConcurrencies: readonly number[]
  /** Key counts of the listing and growth workloads. `BENCH_LIST_SIZES`, default 1000,10000,100000. */
  readonly listSizes: readonly number[]
  /** Largest listing population on S3 (populating 100k objects takes minutes). `BENCH_S3_LIST_MAX`, default 10000. */
  readonly s3ListMax: number
  /** Keys the put/get/head workloads spread over. `BENCH_KEYSPACE`, default 256. */
  readonly keyspace: number
  /**
   * Keys prepared per delete run (the run ends when they run out), and the
   * most keys one create run adds. `BENCH_DELETE_POOL`; default per backend:
   * memory 20 000, fs 300, SQLite 1000, Redis 3000, S3 100.
   */
  readonly deletePool: number | undefined
  /** Where results go. `BENCH_OUT`, default `benchmarks/results`. */
  readonly outDir: string
  /** Where the Markdown report goes. `BENCH_MARKDOWN`, default the repository's `BENCHMARKS.md`. */
  readonly markdownPath: string
  /**
   * The README whose headline table (between the `bench:headline` markers) is
   * regenerated. `BENCH_README`, default the repository's `README.md`; `none` to leave it alone.
   */
  readonly readmePath: string | undefined
}

const ALL_BACKENDS: readonly BackendKind[] = ['memory', 'fs', 'sqlite', 'redis', 's3']

function numbers(value: string | undefined, fallback: readonly number[]): readonly number[] {
  if (value === undefined || value.trim() === '') return fallback
  const parsed = value.split(',').map((part) => Number(part.trim()))
  if (parsed.some((n) => !Number.isFinite(n) || n <= 0))
    throw new Error(`bad number list: ${value}`)
  return parsed
}

function number(value: string | undefined, fallback: number): number {
  return numbers(value, [fallback])[0] as number
}

function count(value: string | undefined, fallback: number): number {
  const parsed = number(value, fallback)
  if (!Number.isInteger(parsed)) throw new Error(`not a whole number: ${value}`)
  return parsed
}

/** The headline workloads: the cells the README quotes. */
export const DEFAULT_HEADLINE = /^(put-1KiB|cas|get-1KiB)$/

/** Reads the knobs from `env`; `defaults` overrides the built-in defaults (the smoke test uses tiny ones). */
export function readConfig(
  env: NodeJS.ProcessEnv,
  defaults: Partial<BenchConfig> & Pick<BenchConfig, 'outDir' | 'markdownPath'>,
): BenchConfig {
  const backends = (env.BENCH_BACKENDS ?? '').trim()
  const selected =
    backends === ''
      ? (defaults.backends ?? ALL_BACKENDS)
      : backends.split(',').map((name) => {
          const kind = name.trim() as BackendKind
          if (!ALL_BACKENDS.includes(kind)) throw new Error(`unknown backend ${name}`)
          return kind
        })
  const only = env.BENCH_ONLY ?? ''
  const paths = (env.BENCH_PATHS ?? '').trim()
  return {
    backends: selected,
    paths:
      paths === ''
        ? defaults.paths
        : paths.split(',').map((name) => {
            const path = name.trim() as PathKind
            if (!['agent-state', 'raw', 'keyv', 'unstorage'].includes(path)) {
              throw new Error(`unknown path ${name}`)
            }
            return path
          }),
    only: only === '' ? defaults.only : new RegExp(only),
    reps: count(env.BENCH_REPS, defaults.reps ?? 5),
    runs: count(env.BENCH_RUNS, defaults.runs ?? 3),
    headline:
      env.BENCH_HEADLINE === undefined || env.BENCH_HEADLINE === ''
        ? (defaults.headline ?? DEFAULT_HEADLINE)
        : new RegExp(env.BENCH_HEADLINE),
    hostNote:
      env.BENCH_HOST_NOTE === undefined || env.BENCH_HOST_NOTE.trim() === ''
        ? defaults.hostNote
        : env.BENCH_HOST_NOTE.trim(),
    repMs: number(env.BENCH_REP_MS, defaults.repMs ?? 200),
    warmupMs: number(env.BENCH_WARMUP_MS, defaults.warmupMs ?? 100),
    s3RepMs: number(env.BENCH_S3_REP_MS, defaults.s3RepMs ?? 400),
    concurrencies: numbers(env.BENCH_CONCURRENCY, defaults.concurrencies ?? [1, 64]),
    valueSizes: numbers(env.BENCH_VALUE_SIZES, defaults.valueSizes ?? [1024, 65536, 1048576]),
    sizeConcurrencies: numbers(env.BENCH_SIZE_CONCURRENCY, defaults.sizeConcurrencies ?? [1]),
    listSizes: numbers(env.BENCH_LIST_SIZES, defaults.listSizes ?? [1000, 10000, 100000]),
    s3ListMax: number(env.BENCH_S3_LIST_MAX, defaults.s3ListMax ?? 10000),
    keyspace: number(env.BENCH_KEYSPACE, defaults.keyspace ?? 256),
    deletePool:
      env.BENCH_DELETE_POOL === undefined ? defaults.deletePool : number(env.BENCH_DELETE_POOL, 1),
    outDir: env.BENCH_OUT ?? defaults.outDir,
    markdownPath: env.BENCH_MARKDOWN ?? defaults.markdownPath,
    readmePath: env.BENCH_README === 'none' ? undefined : (env.BENCH_README ?? defaults.readmePath),
  }
}
