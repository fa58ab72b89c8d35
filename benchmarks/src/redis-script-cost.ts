/**
 * Server cost of the Redis backend's write scripts (issue 34): `INFO commandstats` per phase, the
 * script's server time per call (`usec_per_call` of EVALSHA) and the commands it ran per operation,
 * against a plain `SET` of the same value on the same server, in one run. With
 * `REDIS_SCRIPTS_BEFORE=<git revision>` the scripts of that revision run too, interleaved with the
 * current ones round by round (same server, same process), so before and after share the host's load.
 *
 * `npx -y pnpm@12.4.2 --filter @agent-state/benchmarks bench:redis-scripts`
 * (knobs: `REDIS_SCRIPTS_BEFORE`, `REDIS_SCRIPTS_ROUNDS` default 5, `REDIS_SCRIPTS_OPS` default 4000).
 * Prints a Markdown table; wall-clock server time still moves with the host's load, the counts do not.
 *
 * `REDIS_SCRIPTS_CALLGRIND=1` runs redis-server under valgrind's callgrind instead and reports the
 * instructions the server executed per operation (its 10 Hz `serverCron` taken out, since its share
 * depends on how long a phase took): a cost that does not move with the host's load at all.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Backend } from '@agent-state/core'
import { createRedisBackend } from '@agent-state/redis'
import { startRedisServer } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import * as current from '../../packages/backend-redis/src/lua-scripts.js'
import { startRedisUnderCallgrind } from './callgrind-redis.js'
import { median } from './stats.js'

type Scripts = Record<string, unknown>
const ROUNDS = Number(process.env.REDIS_SCRIPTS_ROUNDS ?? 5)
const OPS = Number(process.env.REDIS_SCRIPTS_OPS ?? 4000)
const CONCURRENCY = 64
const KEYS = 256
const value = new Uint8Array(1024).fill(7)

/** The script sources of a git revision (its lua-scripts.ts and key-layout.ts, loaded as modules). */
async function scriptsAt(revision: string): Promise<Scripts> {
  const dir = mkdtempSync(join(tmpdir(), 'redis-scripts-'))
  for (const file of ['lua-scripts.ts', 'key-layout.ts']) {
    const text = execFileSync('git', ['show', `${revision}:packages/backend-redis/src/${file}`], {
      encoding: 'utf8',
    })
    writeFileSync(join(dir, file), text)
  }
  return (await import(pathToFileURL(join(dir, 'lua-scripts.ts')).href)) as Scripts
}

/** Puts the sources of `scripts` into the backend's script objects (what a new backend then loads). */
function useScripts(scripts: Scripts): void {
  for (const [name, script] of Object.entries(current)) {
    const from = scripts[name] as { source?: string } | undefined
    if (typeof script === 'object' && script !== null && 'source' in script && from?.source) {
      ;(script as { source: string }).source = from.source
    }
  }
}

/** Runs `op(i)` for i < OPS with CONCURRENCY in flight. */
async function pool(op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < OPS) await op(next++)
    }),
  )
}

const CALLGRIND = process.env.REDIS_SCRIPTS_CALLGRIND === '1'

const grind = CALLGRIND ? await startRedisUnderCallgrind() : undefined
const server = grind ?? (await startRedisServer())
const client = new Redis({ host: server.host, port: server.port })

/** Per command: calls and server µs since the last RESETSTAT. */
async function stats(): Promise<Map<string, { calls: number; usec: number }>> {
  const out = new Map<string, { calls: number; usec: number }>()
  const info = await client.info('commandstats')
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    out.set(m[1] as string, { calls: Number(m[2]), usec: Number(m[3]) })
  }
  return out
}

interface Sample {
  usecPerScript: number
  commandsPerOp: string
}

/** One phase: RESETSTAT, the operations, then the script's µs per call and commands per op. */
async function phase(body: () => Promise<void>, scriptCommand = 'evalsha'): Promise<Sample> {
  await client.config('RESETSTAT')
  grind?.zero()
  await body()
  const instructions = grind === undefined ? undefined : grind.instructions().total / OPS
  const s = await stats()
  const script = s.get(scriptCommand) ?? { calls: 0, usec: 0 }
  const perOp = [...s.entries()]
    .filter(([name]) => name !== 'info' && name !== 'config|resetstat')
    .map(([name, { calls }]) => `${name} ${Number((calls / OPS).toFixed(2))}`)
    .join(', ')
  return {
    usecPerScript: instructions ?? script.usec / Math.max(script.calls, 1),
    commandsPerOp: perOp,
  }
}

async function phases(backend: Backend): Promise<Record<string, Sample>> {
  for (let k = 0; k < KEYS; k++) await backend.put(`k${k}`, value)
  await backend.delete('never-written')
  const overwrite = await phase(() => pool((i) => backend.put(`k${i % KEYS}`, value)))
  // Each of the 64 callers has its own keys, so a compare-and-set is never refused.
  const versions = new Map<string, string>()
  for (let k = 0; k < KEYS; k++) versions.set(`k${k}`, (await backend.head(`k${k}`))?.version ?? '')
  const cas = await phase(() =>
    pool(async (i) => {
      const key = `k${i % KEYS}`
      const meta = await backend.put(key, value, { ifMatch: versions.get(key) as string })
      versions.set(key, meta.version)
    }),
  )
  const create = await phase(() => pool((i) => backend.put(`new-${i}`, value)))
  const remove = await phase(() => pool((i) => backend.delete(`new-${i}`)))
  return { overwrite, cas, create, remove }
}

const before = process.env.REDIS_SCRIPTS_BEFORE
// A copy of the current sources: useScripts changes the script objects themselves.
const sources = (scripts: Scripts): Scripts =>
  Object.fromEntries(
    Object.entries(scripts).flatMap(([name, script]) =>
      typeof script === 'object' && script !== null && 'source' in script
        ? [[name, { source: (script as { source: string }).source }]]
        : [],
    ),
  )
const variants: [string, Scripts][] = [['after', sources(current)]]
if (before !== undefined && before !== '') variants.unshift(['before', await scriptsAt(before)])
const raw = new Redis({ host: server.host, port: server.port })
// The servers stop however the run ends (a callgrind server would otherwise outlive it).
try {
  const samples = new Map<string, Sample[]>()
  const add = (name: string, sample: Sample) =>
    samples.set(name, [...(samples.get(name) ?? []), sample])
  for (let round = 0; round < ROUNDS; round++) {
    // Rotate the order, so neither variant always runs first.
    const order = round % 2 === 0 ? variants : [...variants].reverse()
    for (const [name, scripts] of order) {
      useScripts(scripts)
      const backend = createRedisBackend({ port: server.port, namespace: `${name}-${round}` })
      try {
        for (const [p, sample] of Object.entries(await phases(backend))) add(`${name} ${p}`, sample)
      } finally {
        await backend.destroy?.()
        await backend.close()
      }
    }
    add(
      'raw SET',
      await phase(() => pool((i) => raw.set(`raw${i % KEYS}`, Buffer.from(value))), 'set'),
    )
  }
  useScripts(variants[variants.length - 1]?.[1] ?? {})
  console.log(
    `${ROUNDS} rounds of ${OPS} operations at c=${CONCURRENCY}, 1 KiB values, redis-server with appendonly yes`,
  )
  const unit = CALLGRIND ? 'server instructions per operation' : 'server µs per script call'
  console.log(`| phase | ${unit} (median of rounds) | [min–max] | commands per operation |`)
  console.log('|---|---:|---|---|')
  const fmt = (x: number) => (CALLGRIND ? Math.round(x).toLocaleString('en') : x.toFixed(2))
  for (const [name, list] of samples) {
    const us = list.map((s) => s.usecPerScript)
    console.log(
      `| ${name} | ${fmt(median(us))} | [${fmt(Math.min(...us))}–${fmt(Math.max(...us))}] | ${list[0]?.commandsPerOp} |`,
    )
  }
} finally {
  raw.disconnect()
  client.disconnect()
  await server.stop()
}
