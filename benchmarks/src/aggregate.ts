import type { CaseResult, Ratio, RunFigures, SubjectResult } from './runner.js'
import { spreadOf } from './stats.js'

/**
 * Folds the full runs of one case (same backend, workload and concurrency,
 * each from `runCase`) into one result: every figure is the median over the
 * runs with its min–max, so one lucky or unlucky run cannot set a headline
 * cell. A subject that failed in any run fails the case (its first error is
 * kept): a path that breaks now and then is broken. A ratio is kept only
 * where both subjects ran in every run.
 */
export function combineRuns(runs: readonly CaseResult[]): CaseResult {
  const first = runs[0]
  if (first === undefined) throw new Error('combineRuns needs at least one run')
  if (runs.length === 1) return first
  for (const run of runs) {
    if (
      run.backend !== first.backend ||
      run.workload !== first.workload ||
      run.concurrency !== first.concurrency
    ) {
      throw new Error(
        `combineRuns got different cases: ${first.backend} ${first.workload} c=${first.concurrency} and ${run.backend} ${run.workload} c=${run.concurrency}`,
      )
    }
  }

  const subjects: SubjectResult[] = first.subjects.map((base) => {
    const each = runs.map((run) => run.subjects.find((subject) => subject.path === base.path))
    const error =
      each.find((subject) => subject?.error !== undefined)?.error ??
      (each.includes(undefined) ? 'missing from a run' : undefined)
    const figures: RunFigures[] = each.flatMap((subject) => subject?.runs ?? [])
    const opsPerSec = spreadOf(figures.map((run) => run.opsPerSec))
    const p50Us = spreadOf(figures.map((run) => run.p50Us))
    const p99Us = spreadOf(figures.map((run) => run.p99Us))
    const failed = error !== undefined
    return {
      path: base.path,
      label: base.label,
      ...(base.note === undefined ? {} : { note: base.note }),
      opsPerSec: failed ? Number.NaN : opsPerSec.median,
      p50Us: failed ? Number.NaN : p50Us.median,
      p99Us: failed ? Number.NaN : p99Us.median,
      spread: { opsPerSec, p50Us, p99Us },
      runs: figures,
      totalOps: each.reduce((sum, subject) => sum + (subject?.totalOps ?? 0), 0),
      reps: each.flatMap((subject) => subject?.reps ?? []),
      ...(failed ? { error } : {}),
    }
  })

  const failed = new Set(
    subjects.filter((subject) => subject.error !== undefined).map((subject) => subject.path),
  )
  const ratios: Ratio[] = []
  if (!failed.has('agent-state')) {
    for (const base of first.ratios) {
      if (failed.has(base.versus)) continue
      const each = runs.map((run) => run.ratios.find((ratio) => ratio.versus === base.versus))
      if (each.includes(undefined)) continue
      const latencyRuns = each.flatMap((ratio) => ratio?.latencyRuns ?? [])
      const throughputRuns = each.flatMap((ratio) => ratio?.throughputRuns ?? [])
      const latencySpread = spreadOf(latencyRuns)
      const throughputSpread = spreadOf(throughputRuns)
      ratios.push({
        versus: base.versus,
        label: base.label,
        latency: latencySpread.median,
        throughput: throughputSpread.median,
        latencySpread,
        throughputSpread,
        latencyRuns,
        throughputRuns,
      })
    }
  }

  return {
    ...first,
    runs: runs.reduce((sum, run) => sum + run.runs, 0),
    subjects,
    ratios,
  }
}
