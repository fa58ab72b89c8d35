/**
 * Where a Redis `get` at c=64 spends the client's one thread (issue 34: the full run's `get` c=64 cell is
 * 0.56× the raw client's throughput while the server's time per `HMGET` is no higher than per `GET`).
 * Client CPU per operation (`process.cpuUsage`) of agent-state's `get`, a raw `GET` and a raw `HMGET` of
 * six fields, 64 callers each, interleaved over 5 rounds (medians), on one redis-server of the test
 * services. `OPS` (default 40000) operations per round and path.
 *
 *   cd benchmarks && node --conditions=@agent-state/source --import tsx --no-warnings src/redis-get-client-cost.ts
 */
import { createRedisBackend } from '@agent-state/redis'
import { startRedisServer } from '@agent-state/test-services'
import { Redis } from 'ioredis'
import { closedLoop } from './client-cpu-loop.js'
import { median } from './stats.js'

const server = await startRedisServer()
const backend = createRedisBackend({ host: server.host, port: server.port, namespace: 'probe' })
const raw = new Redis({ host: server.host, port: server.port })
const value = new Uint8Array(1024).fill(7)
const KEYS = 256
for (let i = 0; i < KEYS; i++) {
  await backend.put(`k${i}`, value)
  await raw.set(`raw:k${i}`, Buffer.from(value))
}
const C = 64
const OPS = Number(process.env.OPS ?? 40000)
const loop = (op: (i: number) => Promise<unknown>) =>
  closedLoop(op, { concurrency: C, ops: OPS, keys: KEYS })
const ours = (i: number) => backend.get(`k${i}`)
const rawGet = (i: number) => raw.getBuffer(`raw:k${i}`)
const rawHmget = (i: number) => raw.hmgetBuffer(`raw:h${i}`, 'v', 'a', 'b', 'c', 'd', 'e')
for (let i = 0; i < KEYS; i++)
  await raw.hset(`raw:h${i}`, {
    v: Buffer.from(value),
    a: '1',
    b: 'w',
    c: '123',
    d: '1024',
    e: 'x',
  })
await loop(ours)
await loop(rawGet)
/** Per path, each round's client CPU per operation (µs) and throughput (ops/s). */
const rounds = {
  'agent-state get': [] as { usPerOp: number; opsPerSec: number }[],
  'raw GET': [] as { usPerOp: number; opsPerSec: number }[],
  'raw HMGET of 6 fields': [] as { usPerOp: number; opsPerSec: number }[],
}
const paths = [
  ['agent-state get', ours],
  ['raw GET', rawGet],
  ['raw HMGET of 6 fields', rawHmget],
] as const
for (let round = 0; round < 5; round++) {
  for (const [name, op] of paths) rounds[name].push(await loop(op))
}
for (const [name, measured] of Object.entries(rounds)) {
  const cpu = median(measured.map((m) => m.usPerOp)).toFixed(2)
  const rate = median(measured.map((m) => m.opsPerSec)).toFixed(0)
  console.log(`${name}: client CPU ${cpu} µs per operation, ${rate} ops/s`)
}
await backend.close()
raw.disconnect()
await server.stop()
