import { rebuildReports } from './report/rebuild.js'

/**
 * `pnpm --filter @agent-state/benchmarks report`: rebuilds `BENCHMARKS.md`,
 * `ratios.svg` and the README's headline table from `results/latest.json` (and
 * `results/postgres.json`) without measuring again (after changing the
 * renderer, for example). `latest.json` holds summaries only (see `report/summary.ts`).
 */
process.stdout.write(`rebuilt ${rebuildReports().join(', ')}\n`)
