import { Socket } from 'node:net'
import { loadavg } from 'node:os'
import { getManyByGets } from '@agent-state/core'
import { createRedisBackend, redisKeyLayout } from '@agent-state/redis'
import { startRedisServer } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import { GET_FIELDS } from '../../packages/backend-redis/src/script-replies.js'
import { startRedisUnderCallgrind } from './callgrind-redis.js'
import { median } from './stats.js'

/**
 * Redis's native `getMany` against core's fallback (one `get` per distinct
 * key, 16 in flight), the before and after of issue 34, interleaved in one
 * process on one redis-server of the test services (1 KiB values, every key
 * stored). Per path and size (`SIZES`, default 40 and 1000 keys): the wall
 * time of one call and the client's JS CPU per call (median of `ROUNDS`
 * rounds of `CALLS` calls, default 8000 keys' worth, after one discarded
 * warm-up round, the paths' order rotating each round), the socket
 * writes of one call (a call that writes once is one round trip; the
 * fallback's sequential rounds are its distinct keys / 16), and the server's
 * CPU per call (`INFO cpu`, user + sys: parsing, commands, replies; not
 * `commandstats`, which counts a script's inner commands twice). Raw ioredis
 * paths decide how the keys are sent (the choice written down in
 * benchmarks/FINDINGS.md): the backend's way, one pipeline of `HMGET`s (also
 * on a client with the backend's `commandTimeout`, which arms a timer per
 * command), and the alternative, ONE Lua script that runs every `HMGET`
 * (`EVALSHA`; atomic, one command). `REDIS_GET_MANY_CALLGRIND=1` runs the
 * server under valgrind's callgrind instead and reports its instructions per
 * call (a cost the host's load does not move; no times). Run: `cd benchmarks && node --conditions=@agent-state/source
 * --import tsx --no-warnings src/redis-get-many.ts`.
 */

const SIZES = (process.env.SIZES ?? '40,1000').split(',').map(Number)
const ROUNDS = Number(process.env.ROUNDS ?? 7)
/** Calls per round: `CALLS`, or about 8000 keys' worth (at least 20), so small calls are not one timer tick. */
const callsFor = (size: number) =>
  Number(process.env.CALLS ?? Math.max(20, Math.round(8000 / size)))
/** Calls per path and size under callgrind (instructions do not vary from call to call). */
const GRIND_CALLS = 3
const VALUE = new Uint8Array(1024).fill(7)
const NAMESPACE = 'bench'

/** `REDIS_GET_MANY_CALLGRIND=1`: the server under callgrind, reporting its instructions per call instead of times. */
const grind =
  process.env.REDIS_GET_MANY_CALLGRIND === '1' ? await startRedisUnderCallgrind() : undefined
const server: { host: string; port: number; stop(): Promise<void> } =
  grind ?? (await startRedisServer())
const backend = createRedisBackend({ host: server.host, port: server.port, namespace: NAMESPACE })
const raw = new Redis({ host: server.host, port: server.port })
/** A raw client with the backend's default `commandTimeout` (options.ts). */
const timed = new Redis({ host: server.host, port: server.port, commandTimeout: 5000 })
const stats = new Redis({ host: server.host, port: server.port })
const layout = redisKeyLayout('as', NAMESPACE)
const maxKeys = Math.max(...SIZES)
const keys = Array.from({ length: maxKeys }, (_, i) => `runs/r${i % 37}/effects/${i}`)
await Promise.all(keys.map((key) => backend.put(key, VALUE)))

// Socket writes to the server, counted on the prototype every client's socket shares.
let writes = 0
const originalWrite = Socket.prototype.write
Socket.prototype.write = function counted(this: Socket, ...args: unknown[]) {
  if (this.remotePort === server.port) writes++
  return (originalWrite as (...a: unknown[]) => boolean).apply(this, args)
} as typeof originalWrite

const SCRIPT = `local out = {}
for i = 1, #KEYS do out[i] = redis.call('HMGET', KEYS[i], ${GET_FIELDS.map((f) => `'${f}'`).join(', ')}) end
return out`
const sha = (await raw.script('LOAD', SCRIPT)) as string

const native = backend.getMany?.bind(backend)
if (native === undefined) throw new Error('the redis backend has no getMany')

function hmgetPipeline(client: Redis, asked: readonly string[]) {
  const pipeline = client.pipeline()
  for (const key of asked) pipeline.hmgetBuffer(layout.record(key), ...GET_FIELDS)
  return pipeline.exec()
}

type Path = readonly [name: string, call: (keys: string[]) => Promise<unknown>]
const paths: readonly Path[] = [
  ['fallback: core getManyByGets (before)', (k) => getManyByGets(backend, k)],
  ['native getMany (after)', (k) => native(k)],
  ['raw pipeline of HMGETs', (k) => hmgetPipeline(raw, k)],
  ['raw pipeline of HMGETs, commandTimeout set', (k) => hmgetPipeline(timed, k)],
  [
    'raw one Lua script of HMGETs',
    (k) => raw.callBuffer('EVALSHA', sha, k.length, ...k.map((key) => layout.record(key))),
  ],
]

/** The server's CPU time so far (user + sys), µs. */
async function serverCpuUs(): Promise<number> {
  const cpu = await stats.info('cpu')
  const used = (name: string) => Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(cpu)?.[1] ?? 0)
  return (used('used_cpu_user') + used('used_cpu_sys')) * 1e6
}

interface Round {
  wallUs: number
  cpuUs: number
  serverCpuUs: number
}

async function measure(call: Path[1], asked: string[]): Promise<Round> {
  const CALLS = callsFor(asked.length)
  const server0 = await serverCpuUs()
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  for (let i = 0; i < CALLS; i++) await call(asked)
  const wallUs = ((performance.now() - t0) * 1000) / CALLS
  const cpu = process.cpuUsage(cpu0)
  return {
    wallUs,
    cpuUs: (cpu.user + cpu.system) / CALLS,
    serverCpuUs: ((await serverCpuUs()) - server0) / CALLS,
  }
}

const fixed = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1))
try {
  for (const size of SIZES) {
    const asked = keys.slice(0, size).reverse()
    const rounds = new Map<string, Round[]>(paths.map(([name]) => [name, []]))
    const counts = new Map<string, number>()
    for (const [name, call] of paths) {
      const before = writes
      await call(asked) // warm-up, and the socket writes of one call
      counts.set(name, writes - before)
    }
    if (grind !== undefined) {
      for (const [name, call] of paths) {
        grind.zero()
        for (let i = 0; i < GRIND_CALLS; i++) await call(asked)
        const perCall = grind.instructions().total / GRIND_CALLS
        console.log(
          `${size} keys, ${name}: ${(perCall / 1e6).toFixed(2)} M server instructions per call (${(perCall / size / 1e3).toFixed(1)} k per key), ${counts.get(name)} socket writes`,
        )
      }
      continue
    }
    for (let round = -1; round < ROUNDS; round++) {
      for (let j = 0; j < paths.length; j++) {
        const [name, call] = paths[(round + 1 + j) % paths.length] as Path
        const measured = await measure(call, asked)
        // Round -1 warms the JIT up: not counted.
        if (round >= 0) rounds.get(name)?.push(measured)
      }
    }
    for (const [name, measured] of rounds) {
      const of = (field: keyof Round) => median(measured.map((m) => m[field]))
      const wall = measured.map((m) => m.wallUs)
      console.log(
        `${size} keys, ${name}: wall ${fixed(of('wallUs'))} µs per call (rounds ${fixed(Math.min(...wall))}–${fixed(Math.max(...wall))}), client CPU ${fixed(of('cpuUs'))} µs, server CPU ${fixed(of('serverCpuUs'))} µs, ${counts.get(name)} socket writes`,
      )
    }
  }
} finally {
  Socket.prototype.write = originalWrite
  await backend.close()
  raw.disconnect()
  timed.disconnect()
  stats.disconnect()
  await server.stop()
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
