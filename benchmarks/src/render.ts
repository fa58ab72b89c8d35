import { readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { RunResult } from './bench.js'
import { readConfig } from './config.js'
import { renderMarkdown } from './report/markdown.js'
import { renderRatioSvg } from './report/svg.js'

/**
 * `pnpm --filter @agent-state/benchmarks report`: rebuilds `BENCHMARKS.md`
 * and `ratios.svg` from `results/latest.json` without measuring again (after
 * editing `FINDINGS.md`, for example).
 */
const here = dirname(fileURLToPath(import.meta.url))
const config = readConfig(process.env, {
  outDir: resolve(here, '..', 'results'),
  markdownPath: resolve(here, '..', '..', 'BENCHMARKS.md'),
})
const result = JSON.parse(readFileSync(join(config.outDir, 'latest.json'), 'utf8')) as RunResult
writeFileSync(join(config.outDir, 'ratios.svg'), renderRatioSvg(result))
writeFileSync(config.markdownPath, renderMarkdown(result, resolve(here, '..', 'FINDINGS.md')))
process.stdout.write(`rebuilt ${config.markdownPath} and ${join(config.outDir, 'ratios.svg')}\n`)
