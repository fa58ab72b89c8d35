import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Backend, ChangeHint } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createMemoryBackend, createMemoryStore } from '@agent-state/memory'
import { createRedisBackend } from '@agent-state/redis'
import { createSqliteBackend } from '@agent-state/sqlite'
import { redisCli, startRedisServer } from '@agent-state/test-services'
import { quantileSorted, sortedCopy } from './stats.js'

/**
 * Change notification per backend (`pnpm bench:watch`, env `BENCH_WRITES`,
 * `BENCH_IDLE_S`):
 * - write-to-hint latency across processes: a writer process puts a key,
 *   the parent's watch receives its hint; measured from the put's start and
 *   from its acknowledgement, on the host clock both processes share (memory
 *   is single-process: the writer is another instance in the same process);
 * - backend operations per second of 10 idle watches on one instance
 *   (Redis: the server's command count; SQLite: its `data_version` probes
 *   by construction plus the listings counted; fs and memory: listings and
 *   reads counted, inotify costs no operation). S3 claims no change
 *   notification and is not measured.
 * Not a test: nothing here is asserted.
 */

const WRITES = Number(process.env.BENCH_WRITES ?? '200')
const IDLE_S = Number(process.env.BENCH_IDLE_S ?? '5')
const now = () => performance.timeOrigin + performance.now()

interface Writer {
  put(key: string): Promise<{ start: number; acked: number }>
  stop(): Promise<void>
}

async function childWriter(kind: string, options: unknown): Promise<Writer> {
  const child: ChildProcess = fork(
    fileURLToPath(new URL('./change-notification-writer.ts', import.meta.url)),
    [],
    { execArgv: ['--conditions=@agent-state/source', '--import', 'tsx', '--no-warnings'] },
  )
  const waiting = new Map<string, (r: { start: number; acked: number }) => void>()
  let ready: () => void = () => {}
  const isReady = new Promise<void>((resolve) => {
    ready = resolve
  })
  child.on('message', (m: { ready?: true; key?: string; start: number; acked: number }) => {
    if (m.ready) ready()
    else if (m.key !== undefined) waiting.get(m.key)?.(m)
  })
  child.send({ open: { kind, options } })
  await isReady
  return {
    put: (key) =>
      new Promise((resolve) => {
        waiting.set(key, resolve)
        child.send({ key })
      }),
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.disconnect()
      await exited
    },
  }
}

function sameProcessWriter(b: Backend): Writer {
  return {
    async put(key) {
      const start = now()
      await b.put(key, new TextEncoder().encode('v'))
      return { start, acked: now() }
    },
    async stop() {},
  }
}

/** Counts the calls of an instance's operations (the pollers call the instance's own `list`). */
function counted(b: Backend): { backend: Backend; calls: () => number } {
  let calls = 0
  const target = b as unknown as Record<string, unknown>
  for (const name of ['get', 'head', 'list', 'put', 'delete']) {
    const original = target[name] as (...args: unknown[]) => unknown
    target[name] = (...args: unknown[]) => {
      calls++
      return original.apply(b, args)
    }
  }
  return { backend: b, calls: () => calls }
}

async function latency(watching: Backend, writer: Writer) {
  const arrivals = new Map<string, number>()
  const controller = new AbortController()
  let first: () => void = () => {}
  const established = new Promise<void>((resolve) => {
    first = resolve
  })
  const done = (async () => {
    for await (const hint of watching.watch?.('lat/', { signal: controller.signal }) ??
      ([] as ChangeHint[])) {
      if (hint.kind === 'resync') first()
      else if (hint.kind === 'key' && !arrivals.has(hint.key)) arrivals.set(hint.key, now())
    }
  })()
  await established
  const fromStart: number[] = []
  const fromAck: number[] = []
  for (let i = 0; i < WRITES; i++) {
    const key = `lat/${i}`
    const { start, acked } = await writer.put(key)
    const deadline = Date.now() + 5000
    while (!arrivals.has(key) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1))
    }
    const at = arrivals.get(key)
    if (at === undefined) throw new Error(`no hint for ${key} within 5 s`)
    fromStart.push(at - start)
    fromAck.push(at - acked)
  }
  controller.abort()
  await done
  const s = sortedCopy(fromStart)
  const a = sortedCopy(fromAck)
  return {
    p50FromStart: quantileSorted(s, 0.5),
    p99FromStart: quantileSorted(s, 0.99),
    p50FromAck: quantileSorted(a, 0.5),
    p99FromAck: quantileSorted(a, 0.99),
  }
}

async function idleCost(b: Backend, serverOps?: () => Promise<number>) {
  const { backend, calls } = counted(b)
  const controller = new AbortController()
  const loops = Array.from({ length: 10 }, (_, i) =>
    (async () => {
      for await (const _ of backend.watch?.(`idle/${i}/`, { signal: controller.signal }) ??
        ([] as ChangeHint[])) {
        // Idle: nothing is written, so only the first resync arrives.
      }
    })(),
  )
  await new Promise((resolve) => setTimeout(resolve, 500))
  const callsBefore = calls()
  const serverBefore = (await serverOps?.()) ?? 0
  await new Promise((resolve) => setTimeout(resolve, IDLE_S * 1000))
  const serverAfter = (await serverOps?.()) ?? 0
  const counted10 = (calls() - callsBefore) / IDLE_S
  controller.abort()
  await Promise.all(loops)
  return { backendCallsPerS: counted10, serverCommandsPerS: (serverAfter - serverBefore) / IDLE_S }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-bench-watch-'))
  const redis = await startRedisServer()
  const rows: string[] = []
  const report = (name: string, l: Awaited<ReturnType<typeof latency>>, idle: string) => {
    const f = (x: number) => x.toFixed(1)
    rows.push(
      `| ${name} | ${f(l.p50FromStart)} / ${f(l.p99FromStart)} | ${f(l.p50FromAck)} / ${f(l.p99FromAck)} | ${idle} |`,
    )
    console.log(rows[rows.length - 1])
  }
  try {
    {
      const store = createMemoryStore()
      const a = createMemoryBackend({ store, namespace: 'bench' })
      const b = createMemoryBackend({ store, namespace: 'bench' })
      const l = await latency(a, sameProcessWriter(b))
      const idle = await idleCost(createMemoryBackend({ store, namespace: 'bench' }))
      report('memory (same process)', l, `${idle.backendCallsPerS} backend calls/s`)
    }
    {
      const options = { root: join(dir, 'fs'), namespace: 'bench' }
      const writer = await childWriter('fs', options)
      const l = await latency(createFsBackend(options), writer)
      await writer.stop()
      const idle = await idleCost(createFsBackend(options))
      report('fs', l, `${idle.backendCallsPerS} backend calls/s (inotify: no file operation)`)
    }
    {
      const options = { path: join(dir, 'bench.db'), namespace: 'bench' }
      const writer = await childWriter('sqlite', options)
      const l = await latency(createSqliteBackend(options), writer)
      await writer.stop()
      const idle = await idleCost(createSqliteBackend(options))
      report(
        'sqlite',
        l,
        `${idle.backendCallsPerS} listings/s + 20 \`PRAGMA data_version\`/s (one per 50 ms per instance)`,
      )
    }
    {
      const options = { port: redis.port, namespace: 'bench' }
      const writer = await childWriter('redis', options)
      const l = await latency(createRedisBackend(options), writer)
      await writer.stop()
      const commands = async () => {
        const info = await redisCli(redis.port, ['INFO', 'stats'])
        return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? Number.NaN)
      }
      // One INFO per sample is itself a command: subtract it.
      const idle = await idleCost(createRedisBackend(options), commands)
      report(
        'redis',
        l,
        `${idle.backendCallsPerS} backend calls/s, ${Math.max(0, idle.serverCommandsPerS - 1 / IDLE_S).toFixed(2)} server commands/s`,
      )
    }
    console.log(
      `\n${WRITES} writes per backend, 10 idle watches for ${IDLE_S} s\n| backend | write start → hint p50 / p99 (ms) | acknowledgement → hint p50 / p99 (ms) | 10 idle watches |\n| --- | --- | --- | --- |\n${rows.join('\n')}`,
    )
  } finally {
    await redis.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
