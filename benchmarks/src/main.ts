import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runBenchmarks } from './bench.js'
import { readConfig } from './config.js'
import { serializeSummary, summarizeRun } from './report/summary.js'
import { writeReports } from './report/write.js'
import { Services } from './services.js'

/**
 * `pnpm bench`: starts the servers, runs every workload through every path,
 * writes `results/latest.json`, `results/ratios.svg` and `BENCHMARKS.md`.
 */
async function main(): Promise<void> {
  const here = dirname(fileURLToPath(import.meta.url))
  const config = readConfig(process.env, {
    outDir: resolve(here, '..', 'results'),
    markdownPath: resolve(here, '..', '..', 'BENCHMARKS.md'),
    readmePath: resolve(here, '..', '..', 'README.md'),
  })
  const services = new Services(process.env.BENCH_DATA_DIR)
  const log = (line: string): void => {
    process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`)
  }
  let stopping = false
  const stop = async (): Promise<void> => {
    if (stopping) return
    stopping = true
    await services.stop()
  }
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      void stop().then(() => process.exit(signal === 'SIGINT' ? 130 : 143))
    })
  }
  try {
    const result = await runBenchmarks(config, services, log)
    mkdirSync(config.outDir, { recursive: true })
    const summary = summarizeRun(result)
    writeFileSync(join(config.outDir, 'latest.json'), serializeSummary(summary))
    const written = writeReports(summary, config)
    log(
      `wrote ${[join(config.outDir, 'latest.json'), ...written].join(', ')} (${result.durationS} s)`,
    )
  } finally {
    await stop()
  }
}

await main()
