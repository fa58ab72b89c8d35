import type { BenchConfig } from './config.js'
import { runTimed } from './measure.js'
import { median, quantileSorted, type Spread, spreadOf } from './stats.js'
import type { BackendKind, PathKind, Subject } from './subject.js'
import type { Workload, WorkloadInstance } from './workloads.js'

/** One repetition of one subject. */
export interface RepResult {
  /** Which full run (0-based) the repetition belongs to. */
  readonly run: number
  readonly ops: number
  readonly opsPerSec: number
  readonly p50Us: number
}

/** One subject in one case. */
export interface SubjectResult {
  readonly path: PathKind
  readonly label: string
  /** What the subject actually did for this operation, where it differs from the name. */
  readonly note?: string
  /** Median over the full runs of each run's median over its repetitions. */
  readonly opsPerSec: number
  /** Median over the full runs of each run's p50 of its pooled latencies, in microseconds. */
  readonly p50Us: number
  /** Likewise for the p99. */
  readonly p99Us: number
  /** The three figures above with their min–max over the full runs. */
  readonly spread: SubjectSpread
  /** Each full run's figures, in run order. */
  readonly runs: readonly RunFigures[]
  readonly totalOps: number
  readonly reps: readonly RepResult[]
  /** Set when the subject failed; its numbers are then `NaN`. */
  readonly error?: string
}

/** One subject's figures in one full run. */
export interface RunFigures {
  readonly opsPerSec: number
  readonly p50Us: number
  readonly p99Us: number
}

/** A subject's figures over the full runs. */
export interface SubjectSpread {
  readonly opsPerSec: Spread
  readonly p50Us: Spread
  readonly p99Us: Spread
}

/**
 * agent-state compared with one other subject of the same case. Within a full
 * run the ratio is computed per repetition (the two ran back to back) and the
 * median taken; across runs, the median of those run ratios is quoted.
 */
export interface Ratio {
  readonly versus: PathKind
  readonly label: string
  /** agent-state p50 / other p50 (lower is better for agent-state). */
  readonly latency: number
  /** agent-state ops/s / other ops/s (higher is better). */
  readonly throughput: number
  readonly latencySpread: Spread
  readonly throughputSpread: Spread
  /** Each full run's latency ratio, in run order. */
  readonly latencyRuns: readonly number[]
  /** Each full run's throughput ratio, in run order. */
  readonly throughputRuns: readonly number[]
}

/** One workload at one concurrency on one backend, every subject measured interleaved. */
export interface CaseResult {
  readonly backend: BackendKind
  readonly workload: string
  readonly op: Workload['op']
  readonly title: string
  readonly concurrency: number
  readonly valueBytes: number
  readonly population?: number
  /** How many full runs the figures come from (1 for non-headline workloads). */
  readonly runs: number
  readonly subjects: readonly SubjectResult[]
  readonly ratios: readonly Ratio[]
}

const gc = (globalThis as { gc?: () => void }).gc

function message(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

interface Participant {
  readonly subject: Subject
  instance?: WorkloadInstance
  readonly reps: RepResult[]
  readonly latencies: Float64Array[]
  error?: string
}

/**
 * Runs one case: sets the workload up on every subject that supports it,
 * warms each up, then runs the repetitions interleaved (the order rotates
 * every repetition), so scheduler and disk noise hit every path alike.
 */
export async function runCase(
  config: BenchConfig,
  backend: BackendKind,
  workload: Workload,
  concurrency: number,
  subjects: readonly Subject[],
  log: (line: string) => void,
  run = 0,
): Promise<CaseResult> {
  const repMs = backend === 's3' ? config.s3RepMs : config.repMs
  const participants: Participant[] = subjects
    .filter((subject) => workload.supports(subject, concurrency))
    .map((subject) => ({ subject, reps: [], latencies: [] }))

  for (const participant of participants) {
    try {
      participant.subject.prepareFor?.(concurrency)
      participant.instance = await workload.instantiate(participant.subject, concurrency)
      const budget = await participant.instance.beforeRun?.()
      await runTimed(participant.instance.op, {
        concurrency,
        durationMs: config.warmupMs,
        ...(budget === undefined ? {} : { maxOps: budget }),
      })
    } catch (error) {
      participant.error = message(error)
    }
  }

  for (let rep = 0; rep < config.reps; rep++) {
    // Once per round, not per path: a full collection of a large heap takes
    // longer than a repetition, and the rotation spreads the remaining GC alike.
    gc?.()
    const order = participants.map(
      (_, index) => participants[(index + rep) % participants.length] as Participant,
    )
    for (const participant of order) {
      const instance = participant.instance
      if (participant.error !== undefined || instance === undefined) continue
      try {
        participant.subject.prepareFor?.(concurrency)
        const budget = await instance.beforeRun?.()
        const measured = await runTimed(instance.op, {
          concurrency,
          durationMs: repMs,
          ...(budget === undefined ? {} : { maxOps: budget }),
        })
        const sorted = measured.latencies.sorted()
        participant.latencies.push(sorted)
        participant.reps.push({
          run,
          ops: measured.ops,
          opsPerSec: (measured.ops * 1000) / measured.elapsedMs,
          p50Us: quantileSorted(sorted, 0.5),
        })
      } catch (error) {
        participant.error = message(error)
      }
    }
  }

  const results: SubjectResult[] = participants.map((participant) => {
    const pooledLength = participant.latencies.reduce((sum, part) => sum + part.length, 0)
    const pooled = new Float64Array(pooledLength)
    let offset = 0
    for (const part of participant.latencies) {
      pooled.set(part, offset)
      offset += part.length
    }
    pooled.sort()
    const note = participant.subject.notes[workload.op]
    const failed = participant.error !== undefined
    const figures: RunFigures = {
      opsPerSec: failed ? Number.NaN : median(participant.reps.map((rep) => rep.opsPerSec)),
      p50Us: failed ? Number.NaN : quantileSorted(pooled, 0.5),
      p99Us: failed ? Number.NaN : quantileSorted(pooled, 0.99),
    }
    return {
      path: participant.subject.path,
      label: participant.subject.label,
      ...(note === undefined ? {} : { note }),
      ...figures,
      spread: {
        opsPerSec: spreadOf([figures.opsPerSec]),
        p50Us: spreadOf([figures.p50Us]),
        p99Us: spreadOf([figures.p99Us]),
      },
      runs: [figures],
      totalOps: participant.reps.reduce((sum, rep) => sum + rep.ops, 0),
      reps: participant.reps,
      ...(failed ? { error: participant.error as string } : {}),
    }
  })

  const ours = results.find((result) => result.path === 'agent-state')
  const ratios: Ratio[] = []
  if (ours !== undefined && ours.error === undefined) {
    for (const other of results) {
      if (other === ours || other.error !== undefined) continue
      const count = Math.min(ours.reps.length, other.reps.length)
      const latency: number[] = []
      const throughput: number[] = []
      for (let rep = 0; rep < count; rep++) {
        const a = ours.reps[rep] as RepResult
        const b = other.reps[rep] as RepResult
        latency.push(a.p50Us / b.p50Us)
        throughput.push(a.opsPerSec / b.opsPerSec)
      }
      const latencyRatio = median(latency)
      const throughputRatio = median(throughput)
      ratios.push({
        versus: other.path,
        label: other.label,
        latency: latencyRatio,
        throughput: throughputRatio,
        latencySpread: spreadOf([latencyRatio]),
        throughputSpread: spreadOf([throughputRatio]),
        latencyRuns: [latencyRatio],
        throughputRuns: [throughputRatio],
      })
    }
  }

  const summary = results
    .map((result) =>
      result.error === undefined
        ? `${result.label}: ${Math.round(result.opsPerSec)}/s p50 ${result.p50Us.toFixed(1)}µs`
        : `${result.label}: FAILED ${result.error}`,
    )
    .join(' | ')
  log(
    `[${backend}] ${workload.id} c=${concurrency}${run > 0 ? ` (run ${run + 1})` : ''}: ${summary}`,
  )

  return {
    backend,
    workload: workload.id,
    op: workload.op,
    title: workload.title,
    concurrency,
    valueBytes: workload.valueBytes,
    ...(workload.population === undefined ? {} : { population: workload.population }),
    runs: 1,
    subjects: results,
    ratios,
  }
}
