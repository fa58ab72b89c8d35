import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readConfig } from '../config.js'
import type { RunSummary } from './summary.js'
import { writeReports } from './write.js'

/**
 * Rebuilds `BENCHMARKS.md`, `ratios.svg` and the README's headline table from
 * `results/latest.json` (and `results/postgres.json`) without measuring again:
 * `pnpm report`, and `bench:postgres` once it wrote its results. Returns the
 * paths written.
 */
export function rebuildReports(): string[] {
  const here = dirname(fileURLToPath(import.meta.url))
  const config = readConfig(process.env, {
    outDir: resolve(here, '..', '..', 'results'),
    markdownPath: resolve(here, '..', '..', '..', 'BENCHMARKS.md'),
    readmePath: resolve(here, '..', '..', '..', 'README.md'),
  })
  const result = JSON.parse(readFileSync(join(config.outDir, 'latest.json'), 'utf8')) as RunSummary
  return writeReports(result, config)
}
