/**
 * Where a `get` and a `head` spend their time, against the raw prepared
 * `SELECT value … WHERE key = ?` of the benchmarks' raw SQLite path: tight
 * loops of awaited reads of 256 keys of 1 KiB on one connection, every case
 * once per round in a rotating order, medians of the rounds. Load on a
 * shared machine moves every case alike within a round, so the ratios are
 * steadier than the absolute times.
 *
 * Run (from the package directory):
 * node --conditions=@agent-state/source --import tsx benchmarks/read-cost.ts
 * `READ_COST_ROUNDS` (default 7) and `READ_COST_OPS` (reads per case and
 * round, default 20000) size the run; `READ_COST_ONLY`, a regular expression,
 * picks the cases (the raw `SELECT` always runs: it is the unit). `READ_COST_BEFORE` names another copy
 * of this package's `src/index.ts` (for example one extracted from an older
 * commit) whose `get` and `head` run interleaved with this one's, on its own
 * database file holding the same keys.
 *
 * Two layouts a schema version 4 could use for `get` are measured beside
 * them, on a side table holding the same rows (issue 34): the meta packed in
 * one BLOB cell next to the value (`packed`: two cells instead of seven), and
 * that packed meta in front of the value bytes in one cell (`framed`: one
 * cell, as the raw `SELECT value`), each read by its statement alone and by a
 * `get` that verifies the meta's and the value's CRC-32 and decodes the meta.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'
import type { Backend } from '@agent-state/core'
import Database from 'better-sqlite3'
import { createSqliteBackend } from '../src/index.js'
import { META_COLUMNS, STATE_COLUMNS } from '../src/row-codec.js'
import { ENTRIES_TABLE } from '../src/schema.js'

const ROUNDS = Number(process.env.READ_COST_ROUNDS ?? 21)
const OPS = Number(process.env.READ_COST_OPS ?? 20_000)
const KEYS = 256

/**
 * The packed meta cell of the experiment: `meta_check` (CRC-32 of the rest,
 * with the namespace and key hashed first in a real layout), `updated_at`
 * (f64), size (u32), `value_crc` (u32), the version's byte length (u16), the
 * version, then the writer's JSON (empty for none), little-endian.
 */
function packMeta(version: string, updatedAt: number, value: Uint8Array, writer = ''): Buffer {
  const versionBytes = Buffer.from(version)
  const writerBytes = Buffer.from(writer)
  const meta = Buffer.alloc(22 + versionBytes.length + writerBytes.length)
  meta.writeDoubleLE(updatedAt, 4)
  meta.writeUInt32LE(value.byteLength, 12)
  meta.writeUInt32LE(crc32(value), 16)
  meta.writeUInt16LE(versionBytes.length, 20)
  versionBytes.copy(meta, 22)
  writerBytes.copy(meta, 22 + versionBytes.length)
  meta.writeUInt32LE(crc32(meta.subarray(4)), 0)
  return meta
}

/** Verifies and decodes a packed meta and its value, as a schema 4 `get` would. */
function unpackMeta(key: string, meta: Buffer, value: Buffer) {
  if (meta.length < 22 || crc32(meta.subarray(4)) !== meta.readUInt32LE(0))
    throw new Error('corrupt')
  const updatedAt = meta.readDoubleLE(4)
  const size = meta.readUInt32LE(12)
  const valueCrc = meta.readUInt32LE(16)
  const end = 22 + meta.readUInt16LE(20)
  const version = meta.toString('utf8', 22, end)
  const writerText = end === meta.length ? null : meta.toString('utf8', end)
  const writer = writerText === null ? null : (JSON.parse(writerText) as unknown)
  if (value.byteLength !== size || crc32(value) !== valueCrc) throw new Error('corrupt')
  return {
    value: new Uint8Array(value.buffer, value.byteOffset, value.byteLength),
    meta: { key, version, size, writer, updatedAt },
  }
}

const dir = mkdtempSync(join(tmpdir(), 'agent-state-read-cost-'))
type Case = readonly [name: string, read: (key: string) => Promise<unknown>]

try {
  const value = randomBytes(1024)
  const keys = Array.from({ length: KEYS }, (_, i) => `k/${String(i).padStart(4, '0')}`)
  const path = join(dir, 'agent-state.db')
  const backend = await createSqliteBackend({ path })
  for (const key of keys) await backend.put(key, value)

  const raw = new Database(join(dir, 'raw.db'))
  raw.pragma('journal_mode = WAL')
  raw.exec(
    'CREATE TABLE raw_kv (key TEXT PRIMARY KEY NOT NULL, version INTEGER NOT NULL, value BLOB NOT NULL)',
  )
  const insert = raw.prepare('INSERT INTO raw_kv (key, version, value) VALUES (?, 1, ?)')
  for (const key of keys) insert.run(key, value)
  const rawSelect = raw.prepare('SELECT value FROM raw_kv WHERE key = ?').pluck()

  // The same statements the backend prepares, on a second connection, without the decoding.
  const own = new Database(path, { readonly: true })
  const where = `FROM ${ENTRIES_TABLE} WHERE namespace = 'default' AND key = ?`
  const valueOnly = own.prepare(`SELECT value ${where}`).pluck()
  const getRow = own.prepare(`SELECT ${META_COLUMNS}, value ${where}`).raw(true)
  const headRow = own.prepare(`SELECT ${META_COLUMNS} ${where}`).raw(true)
  const wholeValueRow = own.prepare(`SELECT ${STATE_COLUMNS}, value ${where}`).raw(true)
  const wholeRow = own.prepare(`SELECT ${STATE_COLUMNS} ${where}`).raw(true)

  // A packed meta (one BLOB cell instead of six, the question of a schema 4):
  // the same rows' meta in a table of its own, decoded and verified in JS.
  const packedDb = new Database(join(dir, 'packed.db'))
  packedDb.pragma('journal_mode = WAL')
  packedDb.exec(
    'CREATE TABLE packed (namespace TEXT NOT NULL, key TEXT NOT NULL, meta BLOB NOT NULL, value BLOB, framed BLOB, PRIMARY KEY (namespace, key)) STRICT',
  )
  const insertPacked = packedDb.prepare(
    "INSERT INTO packed (namespace, key, meta, value, framed) VALUES ('default', ?, ?, ?, ?)",
  )
  for (const key of keys) {
    const meta = await backend.head(key)
    const packed = packMeta(meta?.version ?? '', meta?.updatedAt ?? 0, value)
    // The packed meta in front of the value, in one cell: a `get` then reads one cell, as the raw SELECT.
    const framed = Buffer.alloc(2 + packed.length + value.length)
    framed.writeUInt16LE(packed.length, 0)
    packed.copy(framed, 2)
    value.copy(framed, 2 + packed.length)
    insertPacked.run(key, packed, value, framed)
  }
  const packedRow = packedDb
    .prepare("SELECT meta, value FROM packed WHERE namespace = 'default' AND key = ?")
    .raw(true)
  const framedRow = packedDb
    .prepare("SELECT framed FROM packed WHERE namespace = 'default' AND key = ?")
    .pluck()
  const framedGet = (key: string) => {
    const cell = framedRow.get(key) as Buffer | undefined
    if (cell === undefined) return null
    const end = 2 + cell.readUInt16LE(0)
    return unpackMeta(key, cell.subarray(2, end), cell.subarray(end))
  }
  const packedGet = (key: string) => {
    const row = packedRow.get(key) as [Buffer, Buffer] | undefined
    if (row === undefined) return null
    return unpackMeta(key, row[0], row[1])
  }

  // The statements alone first: what better-sqlite3 and SQLite cost per cell read.
  const cases: Case[] = [
    ['raw SELECT value', async (key) => rawSelect.get(key)],
    ['own SELECT value', async (key) => valueOnly.get(key)],
    ['own SELECT get cells (7)', async (key) => getRow.get(key)],
    ['own SELECT head cells (6)', async (key) => headRow.get(key)],
    ['own SELECT whole row + value (13)', async (key) => wholeValueRow.get(key)],
    ['own SELECT whole row (12)', async (key) => wholeRow.get(key)],
    ['packed SELECT meta, value (2 cells)', async (key) => packedRow.get(key)],
    ['packed get (statement, checks, decoding)', async (key) => packedGet(key)],
    ['framed SELECT meta and value in one cell', async (key) => framedRow.get(key)],
    ['framed get (statement, checks, decoding)', async (key) => framedGet(key)],
    ['get', (key) => backend.get(key)],
    ['head', (key) => backend.head(key)],
  ]
  const others: Backend[] = []
  const before = process.env.READ_COST_BEFORE
  if (before !== undefined) {
    const module = (await import(before)) as typeof import('../src/index.js')
    const old = await module.createSqliteBackend({ path: join(dir, 'before.db') })
    for (const key of keys) await old.put(key, value)
    others.push(old)
    cases.push(['get (before)', (key) => old.get(key)], ['head (before)', (key) => old.head(key)])
  }

  const only = new RegExp(process.env.READ_COST_ONLY ?? '')
  for (let c = cases.length - 1; c >= 0; c--) {
    const name = (cases[c] as Case)[0]
    if (name !== 'raw SELECT value' && !only.test(name)) cases.splice(c, 1)
  }
  const samples = new Map<string, number[]>(cases.map(([name]) => [name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (let c = 0; c < cases.length; c++) {
      const [name, read] = cases[(c + round) % cases.length] as Case
      for (let i = 0; i < 2000; i++) await read(keys[i % KEYS] as string)
      // CPU time, not wall time: a read never waits, so its CPU time is its
      // cost, and time the thread spends descheduled on a loaded host is left out.
      const started = process.cpuUsage()
      for (let i = 0; i < OPS; i++) await read(keys[i % KEYS] as string)
      const spent = process.cpuUsage(started)
      samples.get(name)?.push(((spent.user + spent.system) * 1000) / OPS)
    }
  }
  const median = (values: number[]): number =>
    [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
  const quartiles = (values: number[]): string => {
    const sorted = [...values].sort((a, b) => a - b)
    const at = (q: number) => (sorted[Math.floor((sorted.length - 1) * q)] as number).toFixed(2)
    return `${at(0.25)}–${at(0.75)}`
  }
  const base = median(samples.get('raw SELECT value') as number[])
  console.log(
    `rounds ${ROUNDS} × ${OPS} reads, load average ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')}`,
  )
  console.log('| case | median CPU ns/op | × raw | quartiles of × raw |')
  console.log('|---|---:|---:|---:|')
  for (const [name, values] of samples) {
    const m = median(values)
    console.log(
      `| ${name} | ${m.toFixed(0)} | ${(m / base).toFixed(2)} | ${quartiles(values.map((v) => v / base))} |`,
    )
  }
  await backend.close()
  for (const other of others) await other.close()
  own.close()
  packedDb.close()
  raw.close()
} finally {
  rmSync(dir, { recursive: true, force: true })
}
