/**
 * Where a Redis native daemon queue operation's time goes, against BullMQ on the same redis-server,
 * in figures the host's load does not change (issue 32): per operation, the client's JS CPU time
 * (`process.cpuUsage`, user + system, of a closed loop at concurrency 1, so it includes the socket
 * calls), the server's instructions (redis-server under callgrind with `QUEUE_COST_CALLGRIND=1`,
 * else its µs per script call from `INFO commandstats`, which load does move) and the commands the
 * server ran. Variants run interleaved round by round in one process (same server, rotated order):
 * this checkout's runtime and backend, BullMQ (`Queue.add`; `Worker.getNextJob` +
 * `Job.moveToCompleted`, completed jobs removed), and with `QUEUE_COST_BEFORE=<dir>` the runtime and
 * backend of another checkout with its dependencies installed (`git archive <rev> | tar -x -C <dir>`,
 * then `npx -y pnpm@12.4.2 install --offline` there), so before and after share the host's load.
 *
 * `cd benchmarks && npx -y pnpm@12.4.2 bench:queue-cost` (knobs: `QUEUE_COST_ROUNDS` default 5,
 * `QUEUE_COST_OPS` default 2000, `QUEUE_COST_CALLGRIND`, `QUEUE_COST_BEFORE`). Prints Markdown.
 */
import { pathToFileURL } from 'node:url'
import type { Backend, NativeQueue } from '@agent-state/core'
import * as memoryAfter from '@agent-state/memory'
import * as redisAfter from '@agent-state/redis'
import * as runtimeAfter from '@agent-state/runtime'
import { startRedisServer } from '@agent-state/test-services'
import { Queue, Worker } from 'bullmq'
import { Redis } from 'ioredis'
import { startRedisUnderCallgrind } from './callgrind-redis.js'
import { median } from './stats.js'

const ROUNDS = Number(process.env.QUEUE_COST_ROUNDS ?? 5)
const OPS = Number(process.env.QUEUE_COST_OPS ?? 2000)
const BACKLOG = 1000
const CALLGRIND = process.env.QUEUE_COST_CALLGRIND === '1'
const BEFORE = process.env.QUEUE_COST_BEFORE ?? ''
const event = (i: number) => ({ kind: 'file_changed', path: `src/new-${i}.ts` })

/** The three timed operations of one queue implementation. */
interface Subject {
  trigger(i: number): Promise<unknown>
  claimAck(): Promise<void>
  /** Acknowledges the current delivery and claims the next one (kept lease); absent for BullMQ. */
  ackAndClaim?(): Promise<void>
  /**
   * Triggers of {@link HANDLES} producers with a connection each (as many processes would have):
   * our queue opened on a backend instance each, BullMQ a `Queue` each.
   */
  readonly handles: readonly ((i: number) => Promise<unknown>)[]
  close(): Promise<void>
}

/** Producers of the concurrent phase, each with its own connection. */
const HANDLES = 16

type Runtime = typeof runtimeAfter
type RedisPackage = typeof redisAfter
type MemoryPackage = typeof memoryAfter

/** Triggers of the runtime-only loop (no server: its figure is the runtime's own JS). */
const STUB_TRIGGERS = Number(process.env.QUEUE_COST_STUB_TRIGGERS ?? 20_000)

/**
 * The runtime's own CPU per native trigger: a native queue on a memory backend whose
 * `queueAppend` answers at once, in a tight loop (validation, the event id, the time, the record
 * JSON, the per-handle batching and its promises; not the Redis client or the server).
 */
async function runtimeOnlyCpuUs(runtime: Runtime, memory: MemoryPackage): Promise<number> {
  const inner = memory.createMemoryBackend()
  let next = 0
  const queue: NativeQueue = {
    queueAppend: async (_keys, append) => {
      const first = next
      next += append.events.length
      return { first, stored: append.events.length }
    },
    queueClaim: async () => null,
    queueSettle: async () => {},
  }
  const backend: Backend = Object.assign(Object.create(inner) as Backend, {
    capabilities: { ...inner.capabilities, nativeQueue: { version: 1 } },
    nativeQueue: queue,
  })
  const daemon = await runtime.createDaemonQueue(backend, `stub-${Math.random()}`, {
    capacity: 1_000_000,
    path: 'native',
  })
  for (let i = 0; i < 1000; i++) await daemon.trigger(event(i))
  const cpu = process.cpuUsage()
  for (let i = 0; i < STUB_TRIGGERS; i++) await daemon.trigger(event(i))
  const used = process.cpuUsage(cpu)
  await inner.close()
  return (used.user + used.system) / STUB_TRIGGERS
}

/** Our queue on the native path, from one checkout's runtime and Redis backend. */
async function nativeSubject(
  runtime: Runtime,
  redis: RedisPackage,
  port: number,
  namespace: string,
): Promise<Subject> {
  const backend: Backend = redis.createRedisBackend({ port, namespace })
  const queue = await runtime.createDaemonQueue(backend, 'cost', {
    capacity: 1_000_000,
    path: 'native',
  })
  for (let i = 0; i < BACKLOG; i++) await queue.trigger(event(i))
  let current: Awaited<ReturnType<typeof queue.claim>> = null
  const others = Array.from({ length: HANDLES }, () =>
    redis.createRedisBackend({ port, namespace }),
  )
  const handles = await Promise.all(others.map((other) => runtime.openDaemonQueue(other, 'cost')))
  return {
    handles: handles.map((handle) => (i: number) => handle.trigger(event(i))),
    trigger: (i) => queue.trigger(event(i)),
    async claimAck() {
      const delivery = await queue.claim()
      if (delivery === null) throw new Error('queue drained early')
      await delivery.ack()
    },
    async ackAndClaim() {
      current = current === null ? await queue.claim() : await current.ackAndClaim()
      if (current === null) throw new Error('queue drained early')
    },
    async close() {
      await current?.release()
      await Promise.all(others.map((other) => other.close()))
      await backend.destroy?.()
      await backend.close()
    },
  }
}

/** BullMQ on the same server, as `queue-peers.ts` measures it. */
async function bullmqSubject(port: number, name: string): Promise<Subject> {
  const connection = { host: '127.0.0.1', port, maxRetriesPerRequest: null }
  const queue = new Queue(name, { connection, defaultJobOptions: { removeOnComplete: true } })
  const worker = new Worker(name, null, { connection, autorun: false })
  for (let i = 0; i < BACKLOG; i++) await queue.add('event', event(i))
  const others = Array.from({ length: HANDLES }, () => new Queue(name, { connection }))
  return {
    handles: others.map((other) => (i: number) => other.add('event', event(i))),
    trigger: (i) => queue.add('event', event(i)),
    async claimAck() {
      const job = await worker.getNextJob('token', { block: false })
      if (job === undefined || job === null) throw new Error('BullMQ queue drained early')
      await job.moveToCompleted('ok', 'token', false)
    },
    async close() {
      await worker.close()
      await Promise.all(others.map((other) => other.close()))
      await queue.obliterate({ force: true })
      await queue.close()
    },
  }
}

const grind = CALLGRIND ? await startRedisUnderCallgrind() : undefined
const server = grind ?? (await startRedisServer())
const stats = new Redis({ host: server.host, port: server.port })

/** One phase's figures per operation. */
interface Sample {
  cpuUs: number
  /** Server instructions (callgrind) or µs of script calls (commandstats) per operation. */
  server: number
  /** Server instructions in `INFO` per operation (callgrind only). */
  info: number
  commands: string
  /** Operations per second of wall time (moves with the load). */
  opsPerSecond: number
}

/** `ops` operations in a closed loop, or spread over concurrent `callers` (each a closed loop). */
async function phase(
  ops: number,
  op: (i: number) => Promise<unknown>,
  callers: readonly ((i: number) => Promise<unknown>)[] = [op],
): Promise<Sample> {
  await stats.config('RESETSTAT')
  grind?.zero()
  const cpu = process.cpuUsage()
  const started = performance.now()
  await Promise.all(
    callers.map(async (caller, c) => {
      for (let i = c; i < ops; i += callers.length) await caller(i)
    }),
  )
  const wallMs = performance.now() - started
  const used = process.cpuUsage(cpu)
  const counted = grind?.instructions()
  const info = await stats.info('commandstats')
  const perOp: string[] = []
  let scriptUs = 0
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    const [name, calls, usec] = [m[1] as string, Number(m[2]), Number(m[3])]
    // RESETSTAT is counted after the reset; the INFO that reads the stats is not in its own answer.
    if (name === 'config|resetstat') continue
    if (name === 'evalsha') scriptUs = usec / ops
    perOp.push(`${name} ${Number((calls / ops).toFixed(2))}`)
  }
  return {
    cpuUs: (used.user + used.system) / ops,
    server: counted === undefined ? scriptUs : counted.total / ops,
    info: counted === undefined ? 0 : counted.inclusive('genRedisInfoString') / ops,
    commands: perOp.join(', '),
    opsPerSecond: (ops / wallMs) * 1000,
  }
}

/** Imports one checkout's runtime and Redis backend (their sources, as this process does its own). */
async function checkout(dir: string): Promise<[Runtime, RedisPackage, MemoryPackage]> {
  const at = (path: string) => pathToFileURL(`${dir}/packages/${path}`).href
  return [
    (await import(at('runtime/src/index.ts'))) as Runtime,
    (await import(at('backend-redis/src/index.ts'))) as RedisPackage,
    (await import(at('backend-memory/src/index.ts'))) as MemoryPackage,
  ]
}

const variants: [string, (round: number) => Promise<Subject>][] = [
  [
    'native (this checkout)',
    (round) => nativeSubject(runtimeAfter, redisAfter, server.port, `after-${round}`),
  ],
  ['BullMQ', (round) => bullmqSubject(server.port, `cost-${round}`)],
]
const runtimes: [string, Runtime, MemoryPackage][] = [
  ['native (this checkout)', runtimeAfter, memoryAfter],
]
if (BEFORE !== '') {
  const [runtime, redis, memory] = await checkout(BEFORE)
  variants.unshift([
    'native (before)',
    (round) => nativeSubject(runtime, redis, server.port, `before-${round}`),
  ])
  runtimes.unshift(['native (before)', runtime, memory])
}

try {
  const samples = new Map<string, Sample[]>()
  const add = (name: string, sample: Sample) =>
    samples.set(name, [...(samples.get(name) ?? []), sample])
  const runtimeOnly = new Map<string, number[]>()
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, runtime, memory] of round % 2 === 0 ? runtimes : [...runtimes].reverse()) {
      runtimeOnly.set(name, [
        ...(runtimeOnly.get(name) ?? []),
        await runtimeOnlyCpuUs(runtime, memory),
      ])
    }
    const order = round % 2 === 0 ? variants : [...variants].reverse()
    for (const [name, make] of order) {
      const subject = await make(round)
      try {
        // Warm-up outside the measured phases.
        for (let i = 0; i < 50; i++) await subject.trigger(i)
        add(`${name} trigger`, await phase(OPS, subject.trigger))
        add(
          `${name} trigger, ${HANDLES} handles`,
          await phase(OPS, subject.trigger, subject.handles),
        )
        add(`${name} claim+ack`, await phase(OPS / 2, () => subject.claimAck()))
        const { ackAndClaim } = subject
        if (ackAndClaim) add(`${name} ackAndClaim`, await phase(OPS / 2, () => ackAndClaim()))
      } finally {
        await subject.close()
      }
    }
  }
  const load = (await import('node:os')).loadavg().map((x) => x.toFixed(1))
  console.log(
    `${ROUNDS} rounds, ${OPS} triggers and ${OPS / 2} of each claim per round, c=1, backlog ${BACKLOG}; load average ${load.join(' ')}`,
  )
  console.log(
    `Runtime only (stubbed queueAppend, ${STUB_TRIGGERS} triggers a round), CPU µs per trigger, median [min–max]: ${[
      ...runtimeOnly,
    ]
      .map(
        ([name, us]) =>
          `${name} ${median(us).toFixed(2)} [${Math.min(...us).toFixed(2)}–${Math.max(...us).toFixed(2)}]`,
      )
      .join('; ')}`,
  )
  const unit = CALLGRIND ? 'server instructions' : 'server µs in EVALSHA'
  console.log(
    `| operation | client CPU µs/op | ${unit}/op${CALLGRIND ? ' | of which INFO' : ''} | ops/s (noisy) | commands per op |`,
  )
  console.log(`|---|---:|---:|${CALLGRIND ? '---:|' : ''}---:|---|`)
  const fmt = (x: number) => (CALLGRIND ? Math.round(x).toLocaleString('en') : x.toFixed(1))
  for (const [name, list] of samples) {
    const cpu = median(list.map((s) => s.cpuUs)).toFixed(1)
    const srv = fmt(median(list.map((s) => s.server)))
    const info = CALLGRIND ? ` ${fmt(median(list.map((s) => s.info)))} |` : ''
    const rate = Math.round(median(list.map((s) => s.opsPerSecond)))
    console.log(`| ${name} | ${cpu} | ${srv} |${info} ${rate} | ${list[0]?.commands} |`)
  }
} finally {
  stats.disconnect()
  await server.stop()
}
