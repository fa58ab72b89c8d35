/**
 * The effect ledger's cost, per backend (not a timed test):
 *
 * 1. overhead: one effect (planned + submitted + confirmed, the dispatch
 *    answering at once) against three plain `put`s of the effect record's
 *    size on the same backend, interleaved per repetition, median ratio;
 * 2. flat cost: the mean time of one effect as one run grows from 10 to
 *    `LEDGER_GROWTH_MAX` effects, and the time to re-open the run.
 *
 *   node --conditions=@agent-state/source --import tsx --expose-gc src/effect-ledger.ts
 *
 * Env: LEDGER_BACKENDS (memory,fs,sqlite,redis,s3), LEDGER_REPS (5),
 * LEDGER_EFFECTS (effects per repetition, 200; 50 on s3), LEDGER_GROWTH_MAX
 * (10000; LEDGER_GROWTH_MAX_S3, 2000 by default, since RGW takes ~10 ms a
 * request). Writes results/effect-ledger.json and results/effect-ledger.md.
 */
import { writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend } from '@agent-state/memory'
import { createRedisBackend } from '@agent-state/redis'
import { type EffectHandler, openRun } from '@agent-state/runtime'
import { runEffectKey } from '@agent-state/runtime/internal'
import { createS3Backend } from '@agent-state/s3'
import { createSqliteBackend } from '@agent-state/sqlite'
import { Services } from './services.js'

type Kind = 'memory' | 'fs' | 'sqlite' | 'redis' | 's3'
const here = dirname(fileURLToPath(import.meta.url))
const kinds = (process.env.LEDGER_BACKENDS ?? 'memory,fs,sqlite,redis,s3').split(',') as Kind[]
const reps = Number(process.env.LEDGER_REPS ?? 5)
const growthMax = Number(process.env.LEDGER_GROWTH_MAX ?? 10_000)
const growthMaxS3 = Number(process.env.LEDGER_GROWTH_MAX_S3 ?? 2000)

const instant: EffectHandler = {
  retrySafe: true,
  dispatch: async (call) => ({ ok: call.effectId }),
  reconcile: async () => ({ status: 'absent' }),
}

async function open(kind: Kind, services: Services): Promise<Backend> {
  const namespace = `ledger-${Date.now().toString(36)}`
  switch (kind) {
    case 'memory':
      return createMemoryBackend({ namespace })
    case 'fs':
      return createFsBackend({ root: services.dataDir('ledger-fs'), namespace })
    case 'sqlite':
      return createSqliteBackend({
        path: join(services.dataDir('ledger-sqlite'), 'state.db'),
        namespace,
      })
    case 'redis': {
      const server = await services.redisServer()
      return createRedisBackend({ host: server.host, port: server.port, namespace })
    }
    case 's3': {
      const server = await services.rgwServer()
      return createS3Backend({
        bucket: 'bench-ledger',
        createBucket: true,
        namespace,
        endpoint: server.endpoint,
        region: server.region,
        forcePathStyle: true,
        credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
      })
    }
  }
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[mid] ?? 0)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

function gc(): void {
  ;(globalThis as { gc?: () => void }).gc?.()
}

async function overhead(kind: Kind, backend: Backend) {
  const n = Number(process.env.LEDGER_EFFECTS ?? (kind === 's3' ? 50 : 200))
  const warm = await openRun(backend, 'warm', { handlers: { pay: instant } })
  for (let i = 0; i < 10; i++) await warm.effect('pay', `w${i}`, { amount: i })
  const size = (await backend.head(runEffectKey('warm', 'w0')))?.size ?? 700
  await warm.close()
  const value = new Uint8Array(size).fill(7)
  const effectMs: number[] = []
  const putsMs: number[] = []
  const ratios: number[] = []
  for (let rep = 0; rep < reps; rep++) {
    const timeEffects = async () => {
      const run = await openRun(backend, `overhead-${rep}`, { handlers: { pay: instant } })
      gc()
      const start = performance.now()
      for (let i = 0; i < n; i++) await run.effect('pay', `e${i}`, { amount: i })
      const ms = (performance.now() - start) / n
      await run.close()
      return ms
    }
    const timePuts = async () => {
      gc()
      const start = performance.now()
      for (let i = 0; i < n; i++) {
        const key = `plain/${rep}/${i}`
        for (let j = 0; j < 3; j++) {
          value[0] = (i + j) & 0xff
          await backend.put(key, value)
        }
      }
      return (performance.now() - start) / n
    }
    // Alternate the order so drift hits both paths alike.
    let e: number
    let p: number
    if (rep % 2 === 0) {
      e = await timeEffects()
      p = await timePuts()
    } else {
      p = await timePuts()
      e = await timeEffects()
    }
    effectMs.push(e)
    putsMs.push(p)
    ratios.push(e / p)
  }
  return {
    recordBytes: size,
    effectsPerRep: n,
    effectMs: median(effectMs),
    threePutsMs: median(putsMs),
    ratio: median(ratios),
  }
}

async function growth(kind: Kind, backend: Backend) {
  const max = kind === 's3' ? Math.min(growthMax, growthMaxS3) : growthMax
  const checkpoints = [10, 100, 1000, 10_000, 100_000].filter((p) => p <= max)
  const runId = 'growth'
  let run = await openRun(backend, runId, { handlers: { pay: instant } })
  const rows: { effects: number; effectMs: number; reopenMs: number }[] = []
  let done = 0
  for (const point of checkpoints) {
    const window = Math.min(50, point)
    while (done < point - window) await run.effect('pay', `g${done++}`, { amount: done })
    gc()
    const start = performance.now()
    while (done < point) await run.effect('pay', `g${done++}`, { amount: done })
    const effectMs = (performance.now() - start) / window
    await run.close()
    const reopenStart = performance.now()
    run = await openRun(backend, runId, { handlers: { pay: instant } })
    const reopenMs = performance.now() - reopenStart
    rows.push({ effects: point, effectMs, reopenMs })
    console.info(
      `  ${kind}: ${point} effects: ${effectMs.toFixed(3)} ms/effect, re-open ${reopenMs.toFixed(1)} ms`,
    )
  }
  await run.close()
  return rows
}

const services = new Services(process.env.BENCH_DATA_DIR)
const results: Record<string, unknown> = {}
const lines = [
  '| backend | record bytes | one effect (ms) | three puts (ms) | ratio | ms/effect at 10 | at the largest run | effects | re-open at 10 (ms) | re-open at the largest (ms) |',
  '|---|---|---|---|---|---|---|---|---|---|',
]
try {
  for (const kind of kinds) {
    const backend = await open(kind, services)
    try {
      const o = await overhead(kind, backend)
      console.info(
        `${kind}: effect ${o.effectMs.toFixed(3)} ms vs three puts ${o.threePutsMs.toFixed(3)} ms: ${o.ratio.toFixed(2)}x`,
      )
      const g = await growth(kind, backend)
      results[kind] = { overhead: o, growth: g }
      const first = g[0]
      const last = g.at(-1)
      lines.push(
        `| ${kind} | ${o.recordBytes} | ${o.effectMs.toFixed(3)} | ${o.threePutsMs.toFixed(3)} | ${o.ratio.toFixed(2)}× | ${first?.effectMs.toFixed(3)} | ${last?.effectMs.toFixed(3)} | ${last?.effects} | ${first?.reopenMs.toFixed(1)} | ${last?.reopenMs.toFixed(1)} |`,
      )
    } finally {
      await backend.close()
    }
  }
} finally {
  await services.stop()
}
const meta = { date: new Date().toISOString(), node: process.version, reps, growthMax, growthMaxS3 }
writeFileSync(
  join(here, '..', 'results', 'effect-ledger.json'),
  `${JSON.stringify({ meta, results }, null, 2)}\n`,
)
writeFileSync(join(here, '..', 'results', 'effect-ledger.md'), `${lines.join('\n')}\n`)
console.info(lines.join('\n'))
