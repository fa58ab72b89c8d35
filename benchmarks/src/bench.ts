import { arch, cpus, loadavg, platform, release, totalmem } from 'node:os'
import type { BenchConfig } from './config.js'
import { type CaseResult, runCase } from './runner.js'
import { openSubjects, type Services } from './services.js'
import type { BackendKind } from './subject.js'
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

/** Runs every configured backend's workloads, interleaving its paths, and collects the results. */
export async function runBenchmarks(
  config: BenchConfig,
  services: Services,
  log: (line: string) => void,
): Promise<RunResult> {
  const started = new Date()
  const loadAvgStart = loadavg()
  const cases: CaseResult[] = []
  const setups: Partial<Record<BackendKind, Record<string, string>>> = {}
  const unavailable: Partial<Record<BackendKind, string>> = {}
  for (const backend of config.backends) {
    let opened: Awaited<ReturnType<typeof openSubjects>>
    try {
      opened = await openSubjects(backend, services)
    } catch (error) {
      unavailable[backend] = error instanceof Error ? error.message : String(error)
      log(`[${backend}] unavailable: ${unavailable[backend]}`)
      continue
    }
    setups[backend] = opened.setup
    const wanted = config.paths
    const subjects = opened.subjects.filter(
      (subject) => wanted === undefined || wanted.includes(subject.path),
    )
    log(`[${backend}] paths: ${subjects.map((subject) => subject.label).join(', ')}`)
    try {
      for (const workload of workloadsFor(config, backend)) {
        for (const concurrency of workload.concurrencies) {
          cases.push(await runCase(config, backend, workload, concurrency, subjects, log))
        }
      }
    } finally {
      await opened.close()
    }
  }
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
    },
    versions: await services.versions(),
    config: {
      reps: config.reps,
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
