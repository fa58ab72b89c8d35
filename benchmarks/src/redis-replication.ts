import { type ChildProcess, fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import type { Backend } from '@agent-state/core'
import { createRedisBackend } from '@agent-state/redis'
import {
  type DelayMode,
  type RedisServer,
  redisCli,
  startRedisServer,
  startTcpProxy,
} from '@agent-state/test-services'
import { median, quantileSorted, sortedCopy } from './stats.js'

/**
 * The cost of the Redis backend's durable acknowledgement (`replication:
 * { replicas: 1 }`, WAIT after every mutating script) on a primary with one
 * replica on this machine. Interleaved repetitions: each repetition runs
 * every path once (order rotated), so neighbours' noise hits all alike.
 * `pnpm bench:redis-replication` (`BENCH_REPS`, `BENCH_OPS`, `BENCH_CONCURRENCY`,
 * `BENCH_WORKLOADS` (comma-separated names; all by default);
 * `BENCH_REPLICA_DELAY_MS` > 0 links the replica through the test services'
 * TCP proxy, delaying every chunk that many ms each way: 1 is an in-region link;
 * the proxy runs in a child process, so the clients' work does not delay its timers;
 * `BENCH_REPLICA_DELAY_MODE` is the proxy's delay mode: `latency` (default: each
 * chunk delayed from its own arrival, chunks in flight overlap, as on a real link)
 * or `pause` (each chunk waits for the one before: the mode of the runs before
 * 2026-12-04, which billed a burst of chunks one delay each)).
 * `BENCH_BEFORE_MODULE` (a path to another build's `src/index.ts`, e.g. an
 * older commit's `packages/backend-redis/src` copied next to this one's so its
 * imports resolve) adds that build's `replicas: 1` as a third path of the same
 * interleaved run: before and after measured side by side.
 * Besides timings it prints `WAIT`s per write from `INFO commandstats`, a
 * count the machine's load does not change.
 */

const REPS = Number(process.env.BENCH_REPS ?? '5')
const OPS = Number(process.env.BENCH_OPS ?? '2000')
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? '16')
const REPLICA_DELAY_MS = Number(process.env.BENCH_REPLICA_DELAY_MS ?? '0')
const REPLICA_DELAY_MODE = process.env.BENCH_REPLICA_DELAY_MODE ?? 'latency'
if (REPLICA_DELAY_MODE !== 'latency' && REPLICA_DELAY_MODE !== 'pause') {
  throw new Error(`BENCH_REPLICA_DELAY_MODE must be latency or pause, not ${REPLICA_DELAY_MODE}`)
}
const value = new Uint8Array(1024).fill(7)

/** Records how long one read took (µs), for the read columns. */
type ReadTimer = <T>(read: Promise<T>) => Promise<T>
type Workload = (b: Backend, worker: number, i: number, timeRead: ReadTimer) => Promise<unknown>

/** Each workload, and the mutating calls one operation makes (for WAITs per write). */
const workloads: Record<string, { run: Workload; writesPerOp: number }> = {
  'put-1KiB': { run: (b, worker, i) => b.put(`w${worker}/k${i % 100}`, value), writesPerOp: 1 },
  'cas-increment': {
    run: async (b, worker, _i, timeRead) => {
      const key = `cas/${worker}`
      const current = await timeRead(b.get(key))
      if (current === null) return b.put(key, value, { ifNoneMatch: '*' })
      return b.put(key, value, { ifMatch: current.meta.version })
    },
    writesPerOp: 1,
  },
  'lease-cycle': {
    run: async (b, worker) => {
      const lease = await b.acquireLease(`lease/${worker}`, { holder: `h${worker}`, ttlMs: 10_000 })
      await b.releaseLease(lease)
    },
    writesPerOp: 2,
  },
  // Reads alone (no WAIT in flight), then reads while the other half of the workers write.
  'get-1KiB': {
    run: (b, worker, i, timeRead) => timeRead(b.get(`w${worker}/k${i % 100}`)),
    writesPerOp: 0,
  },
  'half-get-half-put': {
    run: (b, worker, i, timeRead) =>
      worker % 2 === 0
        ? b.put(`w${worker}/k${i % 100}`, value)
        : timeRead(b.get(`w${worker - 1}/k${i % 100}`)),
    writesPerOp: 0.5,
  },
}

async function timed(
  b: Backend,
  workload: Workload,
): Promise<{ opsPerS: number; p50: number; p99: number; readP50: number; readsPerS: number }> {
  const latencies: number[] = []
  const reads: number[] = []
  let lastRead = 0
  const timeRead: ReadTimer = async (read) => {
    const t = performance.now()
    const result = await read
    lastRead = performance.now()
    reads.push((lastRead - t) * 1000)
    return result
  }
  const perWorker = Math.ceil(OPS / CONCURRENCY)
  const start = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = 0; i < perWorker; i++) {
        const t = performance.now()
        await workload(b, worker, i, timeRead)
        latencies.push((performance.now() - t) * 1000)
      }
    }),
  )
  const seconds = (performance.now() - start) / 1000
  const sorted = sortedCopy(latencies)
  return {
    opsPerS: (perWorker * CONCURRENCY) / seconds,
    p50: quantileSorted(sorted, 0.5),
    p99: quantileSorted(sorted, 0.99),
    readP50: reads.length === 0 ? Number.NaN : quantileSorted(sortedCopy(reads), 0.5),
    // Until the last read: readers beside writers finish before them, so their rate is their own.
    readsPerS: reads.length / ((lastRead - start) / 1000),
  }
}

/** `WAIT` commands the server ran so far (`INFO commandstats`). */
async function waitCalls(port: number): Promise<number> {
  const info = await redisCli(port, ['INFO', 'commandstats'])
  return Number(/cmdstat_wait:calls=(\d+)/.exec(info)?.[1] ?? '0')
}

/** The child's side: a delaying proxy to `port`, its own port sent to the parent. */
async function proxyChild(port: number, delayMs: number, mode: DelayMode): Promise<void> {
  const proxy = await startTcpProxy({ target: { host: '127.0.0.1', port } })
  proxy.setDelay(delayMs, mode)
  process.send?.({ port: proxy.port })
  process.once('disconnect', () => {
    void proxy.stop().then(() => process.exit(0))
  })
}

/** A delaying proxy to `port` in a child process (this file, `proxy` mode). */
async function proxyProcess(
  port: number,
  delayMs: number,
): Promise<{ port: number; child: ChildProcess }> {
  const child = fork(
    fileURLToPath(import.meta.url),
    ['proxy', String(port), String(delayMs), REPLICA_DELAY_MODE],
    {
      execArgv: ['--conditions=@agent-state/source', '--import', 'tsx', '--no-warnings'],
    },
  )
  const [message] = (await once(child, 'message')) as [{ port: number }]
  return { port: message.port, child }
}

async function main(): Promise<void> {
  const primary: RedisServer = await startRedisServer()
  const proxy =
    REPLICA_DELAY_MS > 0 ? await proxyProcess(primary.port, REPLICA_DELAY_MS) : undefined
  const upstream = proxy?.port ?? primary.port
  const replica = await startRedisServer({
    extraArgs: ['--replicaof', '127.0.0.1', String(upstream)],
  })
  try {
    while (
      !(await redisCli(replica.port, ['INFO', 'replication'])).includes('master_link_status:up')
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const replication = { replicas: 1, timeoutMs: 1000 }
    const paths: Record<string, Backend> = {
      off: createRedisBackend({ port: primary.port, namespace: 'bench-off' }),
      'replicas: 1': createRedisBackend({
        port: primary.port,
        namespace: 'bench-wait',
        replication,
      }),
    }
    const beforeModule = process.env.BENCH_BEFORE_MODULE
    if (beforeModule !== undefined) {
      const before = (await import(beforeModule)) as {
        createRedisBackend: typeof createRedisBackend
      }
      paths['replicas: 1, before'] = before.createRedisBackend({
        port: primary.port,
        namespace: 'bench-before',
        replication,
      })
    }
    const names = Object.keys(paths)
    console.log(
      `ops=${OPS} concurrency=${CONCURRENCY} reps=${REPS} replica delay=${REPLICA_DELAY_MS} ms each way (${REPLICA_DELAY_MODE} mode); medians over repetitions`,
    )
    console.log(
      '| workload | replication | ops/s | p50 µs | p99 µs | reads/s | read p50 µs | WAITs/write |',
    )
    console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |')
    const only = process.env.BENCH_WORKLOADS?.split(',')
    for (const [workloadName, { run: workload, writesPerOp }] of Object.entries(workloads)) {
      if (only !== undefined && !only.includes(workloadName)) continue
      const results = new Map<
        string,
        {
          opsPerS: number[]
          p50: number[]
          p99: number[]
          readP50: number[]
          readsPerS: number[]
          waits: number
          ops: number
        }
      >()
      for (const name of names) {
        results.set(name, {
          opsPerS: [],
          p50: [],
          p99: [],
          readP50: [],
          readsPerS: [],
          waits: 0,
          ops: 0,
        })
        await timed(paths[name] as Backend, workload) // warm-up
      }
      for (let r = 0; r < REPS; r++) {
        for (let j = 0; j < names.length; j++) {
          const name = names[(j + r) % names.length] as string
          const before = await waitCalls(primary.port)
          const result = await timed(paths[name] as Backend, workload)
          const into = results.get(name)
          if (into !== undefined) {
            into.waits += (await waitCalls(primary.port)) - before
            into.ops += Math.ceil(OPS / CONCURRENCY) * CONCURRENCY
          }
          into?.opsPerS.push(result.opsPerS)
          into?.p50.push(result.p50)
          into?.p99.push(result.p99)
          into?.readP50.push(result.readP50)
          into?.readsPerS.push(result.readsPerS)
        }
      }
      for (const name of names) {
        const m = results.get(name)
        if (m === undefined) continue
        const hasReads = m.readsPerS.some((n) => n > 0)
        const writes = m.ops * writesPerOp
        console.log(
          `| ${workloadName} | ${name} | ${median(m.opsPerS).toFixed(0)} | ${median(m.p50).toFixed(0)} | ${median(m.p99).toFixed(0)} | ${hasReads ? median(m.readsPerS).toFixed(0) : '-'} | ${hasReads ? median(m.readP50).toFixed(0) : '-'} | ${writes === 0 ? '-' : (m.waits / writes).toFixed(3)} |`,
        )
      }
    }
    await Promise.all(Object.values(paths).map((b) => b.close()))
  } finally {
    await Promise.all([replica.stop(), primary.stop()])
    proxy?.child.disconnect()
  }
}

if (process.argv[2] === 'proxy')
  await proxyChild(Number(process.argv[3]), Number(process.argv[4]), process.argv[5] as DelayMode)
else await main()
