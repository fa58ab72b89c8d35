import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The wake dispatcher's section of `BENCHMARKS.md`: the tables `bench:wakes`
 * (`results/wake-latency.md`), its run with 10,000 timers due in one second
 * (`results/wake-timers-10k.md`) and `bench:wakes-notified`
 * (`results/wake-notified.md`) and `bench:wakes-idle` (`results/wake-idle.md`)
 * last wrote, and their runs on some backends alone (`WAKE_RESULT=…`), quoted
 * as they are (each states its date and load average), or nothing when none
 * was written.
 */
export function readWakeSection(outDir: string): string[] | undefined {
  const tables = [
    ['`bench:wakes` (`benchmarks/src/wake-latency.ts`)', 'wake-latency.md'],
    [
      '10,000 timers due in one second (`WAKE_COUNT=10000 WAKE_COUNT_S3=1000 WAKE_SPREAD_MS=1000 WAKE_RESULT=wake-timers-10k bench:wakes`): the last column is the time until all have fired',
      'wake-timers-10k.md',
    ],
    [
      'The same on SQLite alone (`WAKE_BACKENDS=sqlite … WAKE_RESULT=wake-timers-10k-sqlite`)',
      'wake-timers-10k-sqlite.md',
    ],
    ['`bench:wakes-notified` (`benchmarks/src/wake-notified.ts`)', 'wake-notified.md'],
    [
      'The same on S3 (`WAKE_BACKENDS=s3 WAKE_RESULT=wake-notified-s3`; S3 claims no change notification)',
      'wake-notified-s3.md',
    ],
    ['`bench:wakes-idle` (`benchmarks/src/wake-idle.ts`)', 'wake-idle.md'],
    [
      'The same on the filesystem and S3 (`WAKE_BACKENDS=fs,s3 WAKE_IDLE_COUNTS=1000,10000 WAKE_RESULT=wake-idle-fs-s3`)',
      'wake-idle-fs-s3.md',
    ],
  ].flatMap(([title, file]) => {
    const path = join(outDir, file ?? '')
    if (!existsSync(path)) return []
    return [`### ${title}`, '', readFileSync(path, 'utf8').trim(), '']
  })
  if (tables.length === 0) return undefined
  return [
    '## Wake dispatcher (`bench:wakes`, `bench:wakes-notified`)',
    '',
    'Measured by `cd benchmarks && npx -y pnpm@12.4.2 bench:wakes` and `bench:wakes-notified`, each on a',
    'fresh storage per cell (fs, SQLite, Redis, S3 on RGW), on a 2-core host shared with other agents:',
    'the times are noisy (each table gives its load average); the calls per wake are counts, which load',
    'does not change. What the figures mean: docs/runtime/wakes.md; which code each run measured, and',
    'the figures from before the SQLite burst fix: benchmarks/FINDINGS.md (Wake dispatcher).',
    '',
    ...tables,
  ]
}
