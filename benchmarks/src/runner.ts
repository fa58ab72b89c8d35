import type { BenchConfig } from './config.js'
import { runTimed } from './measure.js'
import { median, quantileSorted } from './stats.js'
import type { BackendKind, PathKind, Subject } from './subject.js'
import type { Workload, WorkloadInstance } from './workloads.js'

/** One repetition of one subject. */
export interface RepResult {
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
  /** Median over the repetitions. */
  readonly opsPerSec: number
  /** From the pooled latencies of all repetitions, in microseconds. */
  readonly p50Us: number
  readonly p99Us: number
  readonly totalOps: number
  readonly reps: readonly RepResult[]
  /** Set when the subject failed; its numbers are then `NaN`. */
  readonly error?: string
}

/** agent-state compared with one other subject of the same case. */
export interface Ratio {
  readonly versus: PathKind
  readonly label: string
  /** Median over repetitions of agent-state p50 / other p50 (lower is better for agent-state). */
  readonly latency: number
  /** Median over repetitions of agent-state ops/s / other ops/s (higher is better). */
  readonly throughput: number
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
    return {
      path: participant.subject.path,
      label: participant.subject.label,
      ...(note === undefined ? {} : { note }),
      opsPerSec: failed ? Number.NaN : median(participant.reps.map((rep) => rep.opsPerSec)),
      p50Us: failed ? Number.NaN : quantileSorted(pooled, 0.5),
      p99Us: failed ? Number.NaN : quantileSorted(pooled, 0.99),
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
      ratios.push({
        versus: other.path,
        label: other.label,
        latency: median(latency),
        throughput: median(throughput),
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
  log(`[${backend}] ${workload.id} c=${concurrency}: ${summary}`)

  return {
    backend,
    workload: workload.id,
    op: workload.op,
    title: workload.title,
    concurrency,
    valueBytes: workload.valueBytes,
    ...(workload.population === undefined ? {} : { population: workload.population }),
    subjects: results,
    ratios,
  }
}
