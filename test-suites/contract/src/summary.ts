import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { CATEGORIES } from './check.js'
import type { CategorySummary, CheckResult, ConformanceSummary } from './types.js'

/**
 * Collects check outcomes while the suite runs. Each test records its own
 * result from inside its body (so the record does not depend on reporter
 * internals); a check that started but never finished (a timeout) stays
 * recorded as failed, one that never started (filtered out) as skipped.
 */
export class SummaryRecorder {
  readonly #backend: string
  readonly #startedAt = new Date()
  readonly #results = new Map<string, CheckResult>()
  readonly #order: string[] = []
  #capabilities: Readonly<Record<string, unknown>> | undefined

  constructor(backend: string) {
    this.#backend = backend
  }

  /** Records the capabilities the backend declared. */
  capabilities(capabilities: Readonly<Record<string, unknown>>): void {
    this.#capabilities = capabilities
  }

  /** Registers a check when it is declared; it stays `skipped` (not run) unless it starts. */
  planned(result: Pick<CheckResult, 'id' | 'category' | 'title'>): void {
    if (!this.#results.has(result.id)) this.#order.push(result.id)
    this.#results.set(result.id, {
      ...result,
      status: 'skipped',
      reason: 'not run (filtered out, or the run stopped early)',
      skipCause: 'not-run',
    })
  }

  /** Marks a check as started: if it never records an outcome, it timed out. */
  started(result: Pick<CheckResult, 'id' | 'category' | 'title'>): void {
    if (!this.#results.has(result.id)) this.#order.push(result.id)
    this.#results.set(result.id, { ...result, status: 'failed', error: 'did not finish (timeout)' })
  }

  /** Records the final outcome of a check. */
  record(result: CheckResult): void {
    if (!this.#results.has(result.id)) this.#order.push(result.id)
    this.#results.set(result.id, result)
  }

  /** The summary so far. */
  summary(): ConformanceSummary {
    const checks = this.#order.map((id) => this.#results.get(id) as CheckResult)
    const categories: Record<string, CategorySummary> = {}
    const totals = { passed: 0, failed: 0, skipped: 0, limitation: 0 }
    for (const category of CATEGORIES) {
      const mine = checks.filter((c) => c.category === category)
      if (mine.length === 0) continue
      const counts = { passed: 0, failed: 0, skipped: 0, limitation: 0 }
      for (const c of mine) counts[c.status]++
      categories[category] = counts
      totals.passed += counts.passed
      totals.failed += counts.failed
      totals.skipped += counts.skipped
      totals.limitation += counts.limitation
    }
    return {
      backend: this.#backend,
      contractVersion: 1,
      startedAt: this.#startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      ...(this.#capabilities === undefined ? {} : { capabilities: this.#capabilities }),
      totals,
      categories,
      checks,
    }
  }
}

/** Renders a summary as the text table printed after the suite. */
export function formatSummary(summary: ConformanceSummary): string {
  const lines = [`agent-state contract v${summary.contractVersion} — backend "${summary.backend}"`]
  if (summary.capabilities !== undefined) {
    lines.push(`  claims ${JSON.stringify(summary.capabilities)}`)
  }
  for (const [category, c] of Object.entries(summary.categories)) {
    lines.push(`  ${category.padEnd(16)} ${formatCounts(c)}`)
  }
  lines.push(`  ${'total'.padEnd(16)} ${formatCounts(summary.totals)}`)
  for (const check of summary.checks) {
    const scale = check.scale === undefined ? '' : ` [ran at ${formatScale(check.scale)}]`
    if (check.status === 'failed') lines.push(`  FAILED  ${check.id}${scale}: ${check.error ?? ''}`)
    else if (check.status === 'limitation') {
      lines.push(`  declared limitation  ${check.id}${scale}: ${check.limitation ?? ''}`)
    } else if (check.status === 'skipped') {
      lines.push(`  skipped ${check.id} (${check.skipCause ?? 'not-run'}): ${check.reason ?? ''}`)
    } else if (scale !== '') lines.push(`  passed  ${check.id}${scale}`)
  }
  return lines.join('\n')
}

function formatCounts(c: CategorySummary): string {
  const base = `passed ${c.passed}  failed ${c.failed}  skipped ${c.skipped}`
  // Only shown where there is one, so the usual table stays as it was.
  return c.limitation > 0 ? `${base}  declared limitation ${c.limitation}` : base
}

function formatScale(scale: Readonly<Record<string, number>>): string {
  return Object.entries(scale)
    .map(([name, value]) => `${name} ${value}`)
    .join(', ')
}

/**
 * Writes the summary as JSON, creating the directory. A `[name]` in `path` is
 * replaced by the backend name (made file-safe), so several suites in one run
 * can share one setting.
 */
export function writeSummary(path: string, summary: ConformanceSummary): void {
  path = path.replaceAll('[name]', summary.backend.replace(/[^A-Za-z0-9._-]+/g, '_'))
  mkdirSync(dirname(path), { recursive: true })
  writeFileSync(path, `${JSON.stringify(summary, null, 2)}\n`)
}
