import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { getManyByGets } from '@agent-state/core'
import { createSqliteBackend } from '@agent-state/sqlite'
import Database from 'better-sqlite3'
import { getManySql } from '../../packages/backend-sqlite/src/get-many.js'
import { decodeValueRow } from '../../packages/backend-sqlite/src/row-codec.js'
import { median } from './stats.js'

/**
 * SQLite's native `getMany` against core's fallback (one `get` per distinct
 * key, 16 in flight), the before and after of issue 34, interleaved in one
 * process on one database file (1 KiB values, `synchronous=NORMAL`, every key
 * stored). Per path and size (`SIZES`, default 100 and 1000 keys): the JS CPU
 * time of one call (`process.cpuUsage` over `CALLS` calls, median of `ROUNDS`
 * rounds, the paths' order rotating each round) and the SQL statements it runs
 * (counted on better-sqlite3's Statement methods). Then the choice of how the
 * keys are bound, raw better-sqlite3 only: the backend's statement with one
 * `json_each(?)` parameter (`JSON.stringify` included) against the same
 * statement over a `VALUES (0, ?), (1, ?), …` list of exactly as many
 * parameters, and one prepared `SELECT … WHERE key = ?` per key (the raw
 * client's loop); and the backend's statement with `get`'s row decoding
 * (`decodeValueRow`: `meta_check`, the value's CRC-32, the meta), without
 * the rest of the call (argument checks, distinct keys, order, the promise). Run: `cd benchmarks && node --conditions=@agent-state/source
 * --import tsx --no-warnings src/sqlite-get-many.ts`.
 */

const SIZES = (process.env.SIZES ?? '100,1000').split(',').map(Number)
const ROUNDS = Number(process.env.ROUNDS ?? 7)
const CALLS = Number(process.env.CALLS ?? 40)
const VALUE = new Uint8Array(1024).fill(7)

const dir = mkdtempSync(join(tmpdir(), 'agent-state-sqlite-get-many-'))
const path = join(dir, 'bench.db')
const backend = createSqliteBackend({ path, namespace: 'bench', synchronous: 'NORMAL' })
const maxKeys = Math.max(...SIZES)
const keys = Array.from({ length: maxKeys }, (_, i) => `runs/r${i % 37}/effects/${i}`)
await Promise.all(keys.map((key) => backend.put(key, VALUE)))

// Statements executed, counted on the prototype every prepared statement shares.
const raw = new Database(path)
const statementProto = Object.getPrototypeOf(raw.prepare('SELECT 1')) as Record<
  string,
  (...args: unknown[]) => unknown
>
let statements = 0
for (const method of ['get', 'all', 'run', 'iterate'] as const) {
  const original = statementProto[method] as (...args: unknown[]) => unknown
  statementProto[method] = function counted(this: unknown, ...args: unknown[]) {
    statements++
    return original.apply(this, args)
  }
}

const native = backend.getMany?.bind(backend)
if (native === undefined) throw new Error('the sqlite backend has no getMany')

/** `json_each` (the backend's statement) and a `VALUES` list of exactly `size` parameters. */
const byJson = raw.prepare(getManySql()).raw(true)
const valuesSql = (size: number) =>
  getManySql().replace(
    /WITH asked\(position, k\) AS \(SELECT key, value FROM json_each\(\?\)\)/,
    `WITH asked(position, k) AS (VALUES ${Array.from({ length: size }, (_, i) => `(${i}, ?)`).join(', ')})`,
  )
const byValues = new Map(SIZES.map((size) => [size, raw.prepare(valuesSql(size)).raw(true)]))
const perKey = raw
  .prepare(
    'SELECT version, writer, updated_at, size, value_crc, meta_check, value FROM agent_state_entries WHERE namespace = ? AND key = ?',
  )
  .raw(true)

type Path = readonly [name: string, call: (keys: string[]) => unknown]
const paths: readonly Path[] = [
  ['fallback: core getManyByGets (before)', (k) => getManyByGets(backend, k)],
  ['native getMany (after)', (k) => native(k)],
  ['raw json_each statement', (k) => byJson.all(JSON.stringify(k), 'bench', 'bench')],
  [
    'raw json_each statement + decodeValueRow',
    (k) => {
      const rows = byJson.all(JSON.stringify(k), 'bench', 'bench') as unknown[][]
      return rows.map((row) => decodeValueRow('bench', k[row[7] as number] as string, row))
    },
  ],
  ['raw VALUES-list statement', (k) => byValues.get(k.length)?.all(...k, 'bench', 'bench')],
  ['raw SELECT per key', (k) => k.map((key) => perKey.get('bench', key))],
]

async function cpuPerCall(call: Path[1], asked: string[]): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) await call(asked)
  const cpu = process.cpuUsage(start)
  return (cpu.user + cpu.system) / CALLS
}

try {
  for (const size of SIZES) {
    const asked = keys.slice(0, size).reverse()
    const rounds = new Map<string, number[]>(paths.map(([name]) => [name, []]))
    const counts = new Map<string, number>()
    for (const [name, call] of paths) {
      const before = statements
      await call(asked) // warm-up, and the statements of one call
      counts.set(name, statements - before)
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (let j = 0; j < paths.length; j++) {
        const [name, call] = paths[(round + j) % paths.length] as Path
        rounds.get(name)?.push(await cpuPerCall(call, asked))
      }
    }
    for (const [name, measured] of rounds) {
      const us = median(measured)
      console.log(
        `${size} keys, ${name}: ${us.toFixed(0)} µs CPU per call (${(us / size).toFixed(2)} µs per key; rounds ${Math.min(...measured).toFixed(0)}–${Math.max(...measured).toFixed(0)}), ${counts.get(name)} statements`,
      )
    }
  }
} finally {
  await backend.close()
  raw.close()
  rmSync(dir, { recursive: true, force: true })
}
console.log(
  `load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
)
