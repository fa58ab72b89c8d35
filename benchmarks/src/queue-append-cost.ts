/**
 * Where a native SQLite queue operation's time goes (benchmarks/FINDINGS.md,
 * "SQLite native path"), on instances with `synchronous = NORMAL`
 * (plainjob's setting), against plainjob on the same disk:
 * - counts, which load does not change: better-sqlite3 statement executions
 *   per operation (reads, writes, and control: `BEGIN IMMEDIATE` and
 *   `COMMIT`, plus savepoints when a group commit batches several bodies;
 *   plainjob's autocommit `add` has none), rows returned and changed, bytes
 *   given to `JSON.parse` and returned by `JSON.stringify`, WAL frames (4 KiB
 *   pages written at commit); and what a raw commit costs by the pages it
 *   writes (`pages()`);
 * - the process CPU time per operation of a tight loop (`process.cpuUsage`,
 *   user + system, process-wide: SQLite runs on this thread, V8's GC and
 *   compiler threads count too, so it exceeds the wall time) and its p50
 *   wall time, per round, medians over the rounds.
 *
 * With `QUEUE_APPEND_COST_BASE` set to another checkout of the repository
 * (its `packages` and `node_modules`), that checkout's SQLite backend and
 * runtime run in the same process as this one's, interleaved round by round
 * (the order alternating), so a before/after comparison sees the same load.
 * A base checkout: `git archive <commit> packages benchmarks package.json
 * tsconfig.base.json | tar -x -C <dir>`, then link this checkout's
 * `node_modules` into it and copy each package's `node_modules` (pnpm's
 * relative links then resolve to the base's own packages). From `benchmarks/`:
 *
 *   QUEUE_APPEND_COST_BASE=<dir> node --conditions=@agent-state/source --import tsx --no-warnings src/queue-append-cost.ts
 *
 * Knobs: `QUEUE_APPEND_COST_OPS` (timed operations per cell per round,
 * default 1000), `QUEUE_APPEND_COST_ROUNDS` (default 5).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Backend, NativeQueue } from '@agent-state/core'
import * as currentRuntime from '@agent-state/runtime'
import * as currentInternal from '@agent-state/runtime/internal'
import * as currentSqlite from '@agent-state/sqlite'
import Database from 'better-sqlite3'
import { better, defineQueue } from 'plainjob'

const ops = Number(process.env.QUEUE_APPEND_COST_OPS ?? 1000)
const rounds = Number(process.env.QUEUE_APPEND_COST_ROUNDS ?? 5)
const base = process.env.QUEUE_APPEND_COST_BASE
const dir = mkdtempSync(join(tmpdir(), 'agent-state-append-cost-'))
const EVENT = ',"eventId":"x","event":{"a":1},"triggeredAt":"2026-12-03T00:00:00.000Z"}'
const CAPACITY = 1_000_000

/** The operations measured on one implementation; each call is one awaited operation. */
interface Subject {
  readonly label: string
  /** Its database file (WAL frames are counted on it). */
  readonly path: string
  readonly operations: Readonly<Record<string, (i: number) => unknown>>
  close(): Promise<void> | void
}

/** A checkout's modules: this one's, or `QUEUE_APPEND_COST_BASE`'s loaded from its sources. */
interface Modules {
  readonly sqlite: typeof currentSqlite
  readonly runtime: typeof currentRuntime
  readonly internal: typeof currentInternal
}

async function modulesOf(root: string): Promise<Modules> {
  const load = (path: string) => import(pathToFileURL(join(root, 'packages', path)).href)
  return {
    sqlite: await load('backend-sqlite/src/index.ts'),
    runtime: await load('runtime/src/index.ts'),
    internal: await load('runtime/src/internal.ts'),
  }
}

/**
 * Our native queue on a fresh database: `put`s of a tail record's size with
 * and without the event copy, `queueAppend` called directly, trigger,
 * claim+ack, and `ackAndClaim` (the daemon's loop, one transaction per event).
 */
async function ours(label: string, modules: Modules): Promise<Subject> {
  const path = join(dir, `${label}.db`)
  const backend: Backend = modules.sqlite.createSqliteBackend({
    path,
    namespace: 'cost',
    synchronous: 'NORMAL',
  })
  const { daemonEventKey, daemonHeadKey, daemonTailKey } = modules.internal
  const queue = await modules.runtime.createDaemonQueue(backend, 'd', {
    path: 'native',
    capacity: CAPACITY,
  })
  const native = backend.nativeQueue as NativeQueue
  const eventPrefix = daemonEventKey('d', 0).replace(/0+$/, '')
  const keys = {
    head: daemonHeadKey('d'),
    tail: daemonTailKey('d'),
    eventPrefix,
    eventDigits: daemonEventKey('d', 0).length - eventPrefix.length,
  }
  // A backlog so claims never find the queue empty (the triggers of every round add more).
  await queue.triggerMany(Array.from({ length: 256 }, (_, k) => ({ warm: k })))
  // A tail record's size without the newest event's copy, and with it (a trigger's event).
  const small = new Uint8Array(60)
  const large = new Uint8Array(260)
  const claimed = async () => {
    const delivery = await queue.claim({ holder: 'bench' })
    if (delivery === null) throw new Error(`${label}: queue drained`)
    return delivery
  }
  let kept: Awaited<ReturnType<typeof claimed>> | null = null
  return {
    label,
    path,
    operations: {
      'put 60 B': (i) => backend.put(`k/${i % 10}`, small),
      'put 260 B': (i) => backend.put(`l/${i % 10}`, large),
      queueAppend: () =>
        native.queueAppend(keys, { capacity: CAPACITY, mode: 'all', events: [EVENT] }),
      trigger: (i) => queue.trigger({ kind: 'file_changed', path: `src/${i}.ts` }),
      'claim+ack': async () => {
        await kept?.release()
        kept = null
        await (await claimed()).ack()
      },
      // The daemon's own loop: each call acknowledges the kept delivery and claims the next.
      ackAndClaim: async () => {
        kept = await (kept ?? (await claimed())).ackAndClaim()
      },
    },
    close: async () => {
      await kept?.release()
      await backend.close()
    },
  }
}

/** plainjob on the same disk: `add`, and `getAndMarkJobAsProcessing` + `markJobAsDone`. */
function plainjob(): Subject {
  const path = join(dir, 'plainjob.db')
  const database = new Database(path)
  const silent = { error() {}, warn() {}, info() {}, debug() {} }
  const queue = defineQueue({ connection: better(database), logger: silent })
  queue.addMany(
    'event',
    Array.from({ length: 256 }, (_, k) => ({ warm: k })),
  )
  return {
    label: 'plainjob',
    path,
    operations: {
      trigger: (i) => queue.add('event', { kind: 'file_changed', path: `src/${i}.ts` }),
      'claim+ack': () => {
        const job = queue.getAndMarkJobAsProcessing('event')
        if (job === undefined) throw new Error('plainjob: queue drained')
        queue.markJobAsDone(job.id)
      },
    },
    close() {
      queue.close()
      database.close()
    },
  }
}

/** What the counting pass adds up over its operations. */
interface Counts {
  reads: number
  writes: number
  control: number
  rowsRead: number
  rowsChanged: number
  parsedBytes: number
  stringifiedBytes: number
}

const zero = (): Counts => ({
  reads: 0,
  writes: 0,
  control: 0,
  rowsRead: 0,
  rowsChanged: 0,
  parsedBytes: 0,
  stringifiedBytes: 0,
})

/**
 * Runs `body` with every better-sqlite3 statement execution and every
 * `JSON.parse` / `JSON.stringify` counted into `counts`, then restores them.
 */
async function counting(counts: Counts, body: () => Promise<void>): Promise<void> {
  const probe = new Database(':memory:')
  const proto = Object.getPrototypeOf(probe.prepare('SELECT 1'))
  probe.close()
  const kind = (source: string) => {
    const verb = source.trimStart().slice(0, 6).toUpperCase()
    return verb === 'SELECT'
      ? 'reads'
      : /^(INSERT|UPDATE|DELETE|REPLAC)/.test(verb)
        ? 'writes'
        : 'control'
  }
  const saved = {
    get: proto.get,
    all: proto.all,
    run: proto.run,
    parse: JSON.parse,
    stringify: JSON.stringify,
  }
  proto.get = function (this: { source: string }, ...args: unknown[]) {
    counts[kind(this.source)]++
    const row = saved.get.apply(this, args)
    if (row !== undefined) counts.rowsRead++
    return row
  }
  proto.all = function (this: { source: string }, ...args: unknown[]) {
    counts[kind(this.source)]++
    const rows = saved.all.apply(this, args)
    counts.rowsRead += rows.length
    return rows
  }
  proto.run = function (this: { source: string }, ...args: unknown[]) {
    counts[kind(this.source)]++
    const result = saved.run.apply(this, args)
    counts.rowsChanged += result.changes
    return result
  }
  JSON.parse = (text: string, ...rest: unknown[]) => {
    counts.parsedBytes += text.length
    return (saved.parse as (...a: unknown[]) => unknown)(text, ...rest)
  }
  JSON.stringify = ((...args: unknown[]) => {
    const out = (saved.stringify as (...a: unknown[]) => string | undefined)(...args)
    counts.stringifiedBytes += out?.length ?? 0
    return out
  }) as typeof JSON.stringify
  try {
    await body()
  } finally {
    Object.assign(proto, { get: saved.get, all: saved.all, run: saved.run })
    JSON.parse = saved.parse
    JSON.stringify = saved.stringify
  }
}

/**
 * WAL frames (pages written at commit) per operation of `call`, on a second
 * connection to `path`: the WAL emptied first, 50 operations, then its frame
 * count (fewer than the 1 000-page auto-checkpoint, so none is lost).
 */
async function walFrames(path: string, call: (i: number) => unknown): Promise<number> {
  const probe = new Database(path)
  try {
    probe.pragma('wal_checkpoint(TRUNCATE)')
    for (let i = 0; i < 50; i++) await call(i)
    const [result] = probe.pragma('wal_checkpoint(PASSIVE)') as { log: number }[]
    return (result?.log ?? Number.NaN) / 50
  } finally {
    probe.close()
  }
}

/** p50 wall time (ms) and CPU time per operation (ms) of `ops` awaited calls. */
async function timed(call: (i: number) => unknown, offset: number) {
  const samples: number[] = []
  const cpu = process.cpuUsage()
  for (let i = 0; i < ops; i++) {
    const started = performance.now()
    await call(offset + i)
    samples.push(performance.now() - started)
  }
  const used = process.cpuUsage(cpu)
  samples.sort((a, b) => a - b)
  return {
    p50: samples[Math.floor(ops / 2)] as number,
    cpu: (used.user + used.system) / 1000 / ops,
  }
}

/**
 * A raw better-sqlite3 database (WAL, `synchronous = NORMAL`) whose
 * operations are one `BEGIN IMMEDIATE` … `COMMIT` updating a 100-byte value
 * in rows on 1, 2, 3 or 5 distinct pages (rows 1 KiB apart, so four to a
 * page): what a commit costs per page it writes, without our backend.
 */
function pages(): Subject {
  const path = join(dir, 'pages.db')
  const database = new Database(path)
  database.pragma('journal_mode = WAL')
  database.pragma('synchronous = NORMAL')
  database.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB, pad BLOB)')
  const insert = database.prepare('INSERT INTO t (id, v, pad) VALUES (?, ?, zeroblob(900))')
  for (let id = 0; id < 400; id++) insert.run(id, new Uint8Array(100))
  const update = database.prepare('UPDATE t SET v = ? WHERE id = ?')
  const value = new Uint8Array(100)
  const commit = database.transaction((ids: readonly number[]) => {
    // A new value each time (SQLite writes no page for an update that changes nothing).
    value[0] = ((value[0] as number) + 1) % 256
    for (const id of ids) update.run(value, id)
  })
  /** `count` rows 40 pages apart, shifted per call so no page stays the only one written. */
  const rows = (count: number, i: number) =>
    Array.from({ length: count }, (_, k) => (k * 160 + (i % 4)) % 400)
  return {
    label: 'raw',
    path,
    operations: Object.fromEntries(
      [1, 2, 3, 5].map((count) => [
        `commit of ${count} page${count > 1 ? 's' : ''}`,
        (i: number) => commit.immediate(rows(count, i)),
      ]),
    ),
    close() {
      database.close()
    },
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

const subjects: Subject[] = [await ours('current', currentModules())]
if (base !== undefined) subjects.push(await ours('base', await modulesOf(base)))
subjects.push(plainjob(), pages())

function currentModules(): Modules {
  return { sqlite: currentSqlite, runtime: currentRuntime, internal: currentInternal }
}

try {
  console.log(
    `load average ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
  // Counts: 100 operations each after 20 uncounted, per operation.
  for (const subject of subjects) {
    for (const [name, call] of Object.entries(subject.operations)) {
      for (let i = 0; i < 20; i++) await call(i)
      const counts = zero()
      await counting(counts, async () => {
        for (let i = 0; i < 100; i++) await call(i)
      })
      const per = Object.entries(counts).map(([k, v]) => `${k} ${(v / 100).toFixed(2)}`)
      const frames = await walFrames(subject.path, call)
      console.log(
        `counts ${subject.label} ${name}: ${per.join(', ')}, walFrames ${frames.toFixed(2)}`,
      )
    }
  }
  // Times: every subject's cells once per round, the subjects' order alternating.
  const results = new Map<string, { p50: number[]; cpu: number[] }>()
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? subjects : [...subjects].reverse()
    for (const subject of order) {
      for (const [name, call] of Object.entries(subject.operations)) {
        const cell = `${subject.label} ${name}`
        const { p50, cpu } = await timed(call, round * ops)
        const entry = results.get(cell) ?? { p50: [], cpu: [] }
        entry.p50.push(p50)
        entry.cpu.push(cpu)
        results.set(cell, entry)
      }
    }
  }
  for (const [cell, { p50, cpu }] of results) {
    console.log(
      `time ${cell}: p50 ${median(p50).toFixed(4)} ms, cpu ${median(cpu).toFixed(4)} ms/op (medians of ${rounds} rounds of ${ops})`,
    )
  }
  console.log(
    `load average ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
} finally {
  for (const subject of subjects) await subject.close()
  rmSync(dir, { recursive: true, force: true })
}
