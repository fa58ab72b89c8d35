import { readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RunResult } from './bench.js'
import { readConfig } from './config.js'
import { writeReports } from './report/write.js'

/**
 * `pnpm --filter @agent-state/benchmarks report`: rebuilds `BENCHMARKS.md`,
 * `ratios.svg` and the README's headline table from `results/latest.json` without measuring again (after
 * editing `FINDINGS.md`, for example).
 */
const here = dirname(fileURLToPath(import.meta.url))
const config = readConfig(process.env, {
  outDir: resolve(here, '..', 'results'),
  markdownPath: resolve(here, '..', '..', 'BENCHMARKS.md'),
  readmePath: resolve(here, '..', '..', 'README.md'),
})
const result = JSON.parse(readFileSync(join(config.outDir, 'latest.json'), 'utf8')) as RunResult
const written = writeReports(result, config, resolve(here, '..', 'FINDINGS.md'))
process.stdout.write(`rebuilt ${written.join(', ')}\n`)
