import type { Backend } from '@agent-state/core'
import { createRedisBackend } from '@agent-state/redis'
import { type RedisServer, redisCli, startRedisServer } from '@agent-state/test-services'
import { median, quantileSorted, sortedCopy } from './stats.js'

/**
 * The cost of the Redis backend's durable acknowledgement (`replication:
 * { replicas: 1 }`, WAIT after every mutating script) on a primary with one
 * replica on this machine. Interleaved repetitions: each repetition runs
 * every path once (order rotated), so neighbours' noise hits all alike.
 * `pnpm bench:redis-replication` (`BENCH_REPS`, `BENCH_OPS`, `BENCH_CONCURRENCY`).
 */

const REPS = Number(process.env.BENCH_REPS ?? '5')
const OPS = Number(process.env.BENCH_OPS ?? '2000')
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? '8')
const value = new Uint8Array(1024).fill(7)

type Workload = (b: Backend, worker: number, i: number) => Promise<unknown>

const workloads: Record<string, Workload> = {
  'put-1KiB': (b, worker, i) => b.put(`w${worker}/k${i % 100}`, value),
  'cas-increment': async (b, worker) => {
    const key = `cas/${worker}`
    const current = await b.get(key)
    if (current === null) return b.put(key, value, { ifNoneMatch: '*' })
    return b.put(key, value, { ifMatch: current.meta.version })
  },
  'lease-cycle': async (b, worker) => {
    const lease = await b.acquireLease(`lease/${worker}`, { holder: `h${worker}`, ttlMs: 10_000 })
    await b.releaseLease(lease)
  },
}

async function timed(
  b: Backend,
  workload: Workload,
): Promise<{ opsPerS: number; p50: number; p99: number }> {
  const latencies: number[] = []
  const perWorker = Math.ceil(OPS / CONCURRENCY)
  const start = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async (_, worker) => {
      for (let i = 0; i < perWorker; i++) {
        const t = performance.now()
        await workload(b, worker, i)
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
  }
}

async function main(): Promise<void> {
  const primary: RedisServer = await startRedisServer()
  const replica = await startRedisServer({
    extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
  })
  try {
    while (
      !(await redisCli(replica.port, ['INFO', 'replication'])).includes('master_link_status:up')
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    const paths: Record<string, Backend> = {
      off: createRedisBackend({ port: primary.port, namespace: 'bench-off' }),
      'replicas: 1': createRedisBackend({
        port: primary.port,
        namespace: 'bench-wait',
        replication: { replicas: 1, timeoutMs: 1000 },
      }),
    }
    const names = Object.keys(paths)
    console.log(`ops=${OPS} concurrency=${CONCURRENCY} reps=${REPS}; medians over repetitions`)
    console.log('| workload | replication | ops/s | p50 µs | p99 µs |')
    console.log('| --- | --- | ---: | ---: | ---: |')
    for (const [workloadName, workload] of Object.entries(workloads)) {
      const results = new Map<string, { opsPerS: number[]; p50: number[]; p99: number[] }>()
      for (const name of names) {
        results.set(name, { opsPerS: [], p50: [], p99: [] })
        await timed(paths[name] as Backend, workload) // warm-up
      }
      for (let r = 0; r < REPS; r++) {
        for (let j = 0; j < names.length; j++) {
          const name = names[(j + r) % names.length] as string
          const result = await timed(paths[name] as Backend, workload)
          const into = results.get(name)
          into?.opsPerS.push(result.opsPerS)
          into?.p50.push(result.p50)
          into?.p99.push(result.p99)
        }
      }
      for (const name of names) {
        const m = results.get(name)
        if (m === undefined) continue
        console.log(
          `| ${workloadName} | ${name} | ${median(m.opsPerS).toFixed(0)} | ${median(m.p50).toFixed(0)} | ${median(m.p99).toFixed(0)} |`,
        )
      }
    }
    await Promise.all(Object.values(paths).map((b) => b.close()))
  } finally {
    await Promise.all([replica.stop(), primary.stop()])
  }
}

await main()
