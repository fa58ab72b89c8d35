import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os'
import { combineRuns } from './aggregate.js'
import type { BenchConfig } from './config.js'
import { type CaseResult, runCase } from './runner.js'
import { openSubjects, type Services } from './services.js'
import type { BackendKind, Subject } from './subject.js'
import { workloadsFor } from './workloads.js'

/** Everything one run measured, as written to `results/latest.json`. */
export interface RunResult {
  readonly startedAt: string
  readonly finishedAt: string
  readonly durationS: number
  readonly machine: {
    readonly cpus: string
    readonly cpuCount: number
    readonly memoryGiB: number
    readonly os: string
    readonly node: string
    readonly loadAvgStart: readonly number[]
    readonly loadAvgEnd: readonly number[]
    /** What else shared the host (`BENCH_HOST_NOTE`), when told. */
    readonly note?: string
  }
  /** Versions of the clients, servers and peer libraries used. */
  readonly versions: Readonly<Record<string, string>>
  readonly config: Readonly<Record<string, unknown>>
  /** Per backend: what its subjects run on (paths, server settings). */
  readonly setups: Readonly<Partial<Record<BackendKind, Readonly<Record<string, string>>>>>
  /** Backends that could not be set up at all, with the reason. */
  readonly unavailable: Readonly<Partial<Record<BackendKind, string>>>
  readonly cases: readonly CaseResult[]
}

/**
 * Runs every configured backend's workloads, interleaving its paths, and
 * collects the results. Run 1 measures every workload; runs 2..`runs` measure
 * the headline workloads again, each a full case (set-up, warm-up, timed
 * repetitions) on every backend in turn, so the runs of one cell lie minutes
 * apart and a quiet or busy spell of the host lands in one run, not in all.
 * Every backend stays open across the runs.
 */
export async function runBenchmarks(
  config: BenchConfig,
  services: Services,
  log: (line: string) => void,
): Promise<RunResult> {
  const started = new Date()
  const loadAvgStart = loadavg()
  const setups: Partial<Record<BackendKind, Record<string, string>>> = {}
  const unavailable: Partial<Record<BackendKind, string>> = {}
  const opened: { backend: BackendKind; subjects: readonly Subject[]; close(): Promise<void> }[] =
    []
  // Case key → that case's result of each run, in the order run 1 produced them.
  const byCase = new Map<string, CaseResult[]>()
  try {
    for (const backend of config.backends) {
      let subjects: Awaited<ReturnType<typeof openSubjects>>
      try {
        subjects = await openSubjects(backend, services)
      } catch (error) {
        unavailable[backend] = error instanceof Error ? error.message : String(error)
        log(`[${backend}] unavailable: ${unavailable[backend]}`)
        continue
      }
      setups[backend] = subjects.setup
      const wanted = config.paths
      const chosen = subjects.subjects.filter(
        (subject) => wanted === undefined || wanted.includes(subject.path),
      )
      opened.push({ backend, subjects: chosen, close: () => subjects.close() })
      log(`[${backend}] paths: ${chosen.map((subject) => subject.label).join(', ')}`)
    }
    for (let run = 0; run < config.runs; run++) {
      for (const { backend, subjects } of opened) {
        for (const workload of workloadsFor(config, backend)) {
          if (run > 0 && !config.headline.test(workload.id)) continue
          for (const concurrency of workload.concurrencies) {
            const key = `${backend}|${workload.id}|${concurrency}`
            const result = await runCase(config, backend, workload, concurrency, subjects, log, run)
            const list = byCase.get(key)
            if (list === undefined) byCase.set(key, [result])
            else list.push(result)
          }
        }
      }
    }
  } finally {
    for (const backend of opened) await backend.close()
  }
  const cases = [...byCase.values()].map((runs) => combineRuns(runs))
  const finished = new Date()
  const cpuList = cpus()
  return {
    startedAt: started.toISOString(),
    finishedAt: finished.toISOString(),
    durationS: Math.round((finished.getTime() - started.getTime()) / 1000),
    machine: {
      cpus: cpuList[0]?.model ?? 'unknown',
      cpuCount: cpuList.length,
      memoryGiB: Math.round(totalmem() / 1024 ** 3),
      os: `${platform()} ${release()} ${arch()}`,
      node: process.version,
      loadAvgStart,
      loadAvgEnd: loadavg(),
      ...(config.hostNote === undefined ? {} : { note: config.hostNote }),
    },
    versions: await services.versions(),
    config: {
      reps: config.reps,
      runs: config.runs,
      headline: config.headline.source,
      repMs: config.repMs,
      s3RepMs: config.s3RepMs,
      warmupMs: config.warmupMs,
      concurrencies: config.concurrencies,
      valueSizes: config.valueSizes,
      sizeConcurrencies: config.sizeConcurrencies,
      listSizes: config.listSizes,
      s3ListMax: config.s3ListMax,
      keyspace: config.keyspace,
      deletePool: config.deletePool,
      only: config.only?.source ?? null,
      paths: config.paths ?? 'all',
    },
    setups,
    unavailable,
    cases,
  }
}
