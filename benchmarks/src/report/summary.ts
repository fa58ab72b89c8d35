import type { RunResult } from '../bench.js'
import type { CaseResult, Ratio, SubjectResult } from '../runner.js'

/** A subject's figures without the per-run and per-repetition samples they were computed from. */
export type SubjectSummary = Omit<SubjectResult, 'runs' | 'reps'>

/** A ratio without its per-run values (its spread keeps the median and min–max). */
export type RatioSummary = Omit<Ratio, 'latencyRuns' | 'throughputRuns'>

/** One case as the reports read it. */
export interface CaseSummary extends Omit<CaseResult, 'subjects' | 'ratios'> {
  readonly subjects: readonly SubjectSummary[]
  readonly ratios: readonly RatioSummary[]
}

/**
 * What `results/latest.json` holds: a run's summaries, the figures every
 * report (`BENCHMARKS.md`, `ratios.svg`, the README's headline table) is
 * rendered from. The samples behind them (each repetition, each full run)
 * stay in memory during `pnpm bench`; a new run regenerates them.
 */
export interface RunSummary extends Omit<RunResult, 'cases'> {
  readonly cases: readonly CaseSummary[]
}

/** `result` without its samples: what the reports need, nothing else. */
export function summarizeRun(result: RunSummary): RunSummary {
  return {
    ...result,
    cases: result.cases.map((row) => ({
      ...row,
      subjects: row.subjects.map((subject) => {
        const { runs: _runs, reps: _reps, ...summary } = subject as SubjectResult
        return summary
      }),
      ratios: row.ratios.map((ratio) => {
        const { latencyRuns: _l, throughputRuns: _t, ...summary } = ratio as Ratio
        return summary
      }),
    })),
  }
}

/**
 * The summary as JSON with one case per line, so that a new run's diff shows
 * which cases moved.
 */
export function serializeSummary(summary: RunSummary): string {
  const { cases, ...head } = summary
  const top = JSON.stringify(head, null, 2).replace(/\n}$/, '')
  const lines = cases.map((row) => `    ${JSON.stringify(row)}`)
  return `${top},\n  "cases": [\n${lines.join(',\n')}\n  ]\n}\n`
}
