import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BenchConfig } from '../config.js'
import { renderMarkdown } from './markdown.js'
import { readPostgresResults } from './postgres.js'
import { renderReadmeHeadline, replaceReadmeHeadline } from './readme.js'
import type { RunSummary } from './summary.js'
import { renderRatioSvg } from './svg.js'
import { readUiSection } from './ui.js'
import { readWakeSection } from './wakes.js'

/**
 * `BENCHMARKS.md` as the results in `outDir` render it: the run's summaries,
 * the PostgreSQL section from `postgres.json`, and the wake and ui sections
 * from the tables their benchmarks last wrote. The one way to build it, so
 * the smoke test compares the committed file with exactly what `pnpm report`
 * would write.
 */
export function renderReport(result: RunSummary, outDir: string): string {
  return renderMarkdown(result, readPostgresResults(outDir), [
    readWakeSection(outDir),
    readUiSection(outDir),
  ])
}

/**
 * Writes every view of one run's results: `ratios.svg`, the Markdown report
 * (with the PostgreSQL section from `postgres.json` and the wake section from
 * `wake-latency.md` / `wake-notified.md` when they exist) and the
 * README's headline table, so none of them can disagree with `latest.json`.
 * Returns the paths written.
 */
export function writeReports(
  result: RunSummary,
  config: Pick<BenchConfig, 'outDir' | 'markdownPath' | 'readmePath'>,
): string[] {
  const written = [join(config.outDir, 'ratios.svg'), config.markdownPath]
  writeFileSync(join(config.outDir, 'ratios.svg'), renderRatioSvg(result))
  writeFileSync(config.markdownPath, renderReport(result, config.outDir))
  if (config.readmePath !== undefined) {
    const readme = readFileSync(config.readmePath, 'utf8')
    writeFileSync(config.readmePath, replaceReadmeHeadline(readme, renderReadmeHeadline(result)))
    written.push(config.readmePath)
  }
  return written
}
