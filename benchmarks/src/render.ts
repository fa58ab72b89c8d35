import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { readConfig } from './config.js'
import type { RunSummary } from './report/summary.js'
import { writeReports } from './report/write.js'

/**
 * `pnpm --filter @agent-state/benchmarks report`: rebuilds `BENCHMARKS.md`,
 * `ratios.svg` and the README's headline table from `results/latest.json` without measuring again (after
 * changing the renderer, for example). `latest.json` holds summaries only (see `report/summary.ts`).
 */
const here = dirname(fileURLToPath(import.meta.url))
const config = readConfig(process.env, {
  outDir: resolve(here, '..', 'results'),
  markdownPath: resolve(here, '..', '..', 'BENCHMARKS.md'),
  readmePath: resolve(here, '..', '..', 'README.md'),
})
const result = JSON.parse(readFileSync(join(config.outDir, 'latest.json'), 'utf8')) as RunSummary
const written = writeReports(result, config)
process.stdout.write(`rebuilt ${written.join(', ')}\n`)
