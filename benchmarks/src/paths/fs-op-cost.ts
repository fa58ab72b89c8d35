/**
 * What one fs operation costs, in measures that host load does not change:
 * system calls per operation (under `strace -f`) and CPU time per operation
 * (user + system, all threads), for the agent-state fs backend against the raw
 * client of `fs.ts`, at concurrency 1. Issue 34.
 *
 * `cd benchmarks && node --conditions=@agent-state/source --import tsx src/paths/fs-op-cost.ts`
 *
 * - Syscalls: for each path and operation, a child runs `FS_COST_OPS` (200)
 *   operations under `strace -f -qq`, between two marker calls (an `access` of
 *   a name that cannot exist); the calls between the markers, divided by the
 *   count, are the cost of one operation, by name.
 * - CPU: in this process, rounds of 200 operations of each path, interleaved
 *   (so load moves every path alike), `FS_COST_ROUNDS` (7) rounds; the median
 *   µs of CPU per operation and its ratio to the raw client's.
 *
 * `FS_COST_STRACE=0` skips the syscall counts.
 *
 * `log-floor` is the least a per-namespace append log could cost (see
 * `logFloorRunner`), for FINDINGS' estimate of what that format change would win.
 *
 * `FS_COST_BEFORE=<dir>` adds a path `before`: the backend's `src/index.ts`
 * under `<dir>` (for example `git archive main packages/backend-fs/src` unpacked
 * into `packages/backend-fs/.before`, so its `@agent-state/core` import
 * resolves), measured interleaved with the current sources.
 */
import { spawnSync } from 'node:child_process'
import {
  accessSync,
  closeSync,
  fdatasyncSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  writeSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { median } from '../stats.js'
import { rawFsSubject } from './fs.js'

const OPS = Number(process.env.FS_COST_OPS ?? 200)
const ROUNDS = Number(process.env.FS_COST_ROUNDS ?? 7)
const KEYS = 16
const MARK = '/nonexistent-fs-op-cost-marker'
const OPERATIONS = ['put', 'cas', 'get'] as const
type Operation = (typeof OPERATIONS)[number]

/** One path's operations on prepared keys: `run(i)` does operation `i`. */
interface Runner {
  readonly name: string
  prepare(): Promise<void>
  op(operation: Operation): (i: number) => Promise<unknown>
  close(): Promise<void>
}

const value = new Uint8Array(1024).fill(7)

function backendRunner(name: string, backend: Backend): Runner {
  const versions: string[] = []
  return {
    name,
    async prepare() {
      for (let k = 0; k < KEYS; k++) versions[k] = (await backend.put(`k${k}`, value)).version
    },
    op(operation) {
      if (operation === 'put') {
        return async (i) => {
          versions[i % KEYS] = (await backend.put(`k${i % KEYS}`, value)).version
        }
      }
      if (operation === 'get') return (i) => backend.get(`k${i % KEYS}`)
      return async (i) => {
        const k = i % KEYS
        versions[k] = (
          await backend.put(`k${k}`, value, { ifMatch: versions[k] as string })
        ).version
      }
    },
    close: () => backend.close(),
  }
}

function rawRunner(root: string): Runner {
  const raw = rawFsSubject(root)
  raw.prepareFor?.(1)
  return {
    name: 'raw',
    async prepare() {
      for (let k = 0; k < KEYS; k++) await raw.put(`k${k}`, value)
    },
    op(operation) {
      if (operation === 'get') return (i) => raw.get(`k${i % KEYS}`)
      return (i) => raw.put(`k${i % KEYS}`, value) // a file write has no compare-and-set
    },
    close: () => raw.close(),
  }
}

/**
 * The floor of the per-namespace append log FINDINGS proposes (not built):
 * each write appended to one open file and `fdatasync`ed, a read one `pread`
 * at a known offset. No index, no compaction, no envelope: what such a log
 * could cost at least, at c=1.
 */
function logFloorRunner(root: string): Runner {
  let fd = -1
  return {
    name: 'log-floor',
    async prepare() {
      mkdirSync(root, { recursive: true, mode: 0o700 })
      fd = openSync(join(root, 'log'), 'a+', 0o600)
      for (let k = 0; k < KEYS; k++) writeSync(fd, value)
    },
    op(operation) {
      if (operation === 'get') {
        return async (i) => {
          const out = Buffer.allocUnsafe(value.byteLength)
          readSync(fd, out, 0, out.byteLength, (i % KEYS) * value.byteLength)
          return out
        }
      }
      return async () => {
        writeSync(fd, value)
        fdatasyncSync(fd)
      }
    },
    async close() {
      closeSync(fd)
    },
  }
}

async function runners(root: string): Promise<Runner[]> {
  const list = [
    rawRunner(join(root, 'raw')),
    logFloorRunner(join(root, 'log')),
    backendRunner('agent-state', createFsBackend({ root: join(root, 'as'), namespace: 'cost' })),
  ]
  const before = process.env.FS_COST_BEFORE
  if (before !== undefined && before !== '') {
    const module = (await import(pathToFileURL(join(resolve(before), 'src/index.ts')).href)) as {
      createFsBackend: typeof createFsBackend
    }
    list.push(
      backendRunner(
        'before',
        module.createFsBackend({ root: join(root, 'before'), namespace: 'cost' }),
      ),
    )
  }
  return list
}

function mark(): void {
  try {
    accessSync(MARK)
  } catch {
    // The marker only has to appear in the trace.
  }
}

/** Child mode: one path, one operation, `OPS` times between two markers. */
async function child(pathName: string, operation: Operation): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'fs-op-cost-'))
  try {
    const runner = (await runners(root)).find((r) => r.name === pathName)
    if (runner === undefined) throw new Error(`no path ${pathName}`)
    await runner.prepare()
    const run = runner.op(operation)
    for (let i = 0; i < 50; i++) await run(i) // warm-up: code paths compiled, directories open
    mark()
    for (let i = 0; i < OPS; i++) await run(i)
    mark()
    await runner.close()
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

/** Syscalls per operation, by name, from the trace between the two markers. */
function countSyscalls(pathName: string, operation: Operation): Map<string, number> {
  const out = join(mkdtempSync(join(tmpdir(), 'fs-op-cost-trace-')), 'trace')
  const self = fileURLToPath(import.meta.url)
  const result = spawnSync(
    'strace',
    [
      '-f',
      '-qq',
      '-o',
      out,
      process.execPath,
      ...process.execArgv,
      self,
      'child',
      pathName,
      operation,
    ],
    { stdio: 'inherit' },
  )
  if (result.status !== 0) throw new Error(`strace child failed: ${result.status}`)
  const lines = readFileSync(out, 'utf8').split('\n')
  rmSync(join(out, '..'), { recursive: true, force: true })
  const marks = lines.flatMap((line, index) => (line.includes(MARK) ? [index] : []))
  const counts = new Map<string, number>()
  for (const line of lines.slice((marks[0] ?? 0) + 1, marks.at(-1))) {
    // `pid name(args) = result`, or a resumed call (`<... name resumed>`), counted once at its start.
    const match = /^\d+\s+([a-z0-9_]+)\(/.exec(line)
    if (match === null) continue
    const name = match[1] as string
    counts.set(name, (counts.get(name) ?? 0) + 1 / OPS)
  }
  return counts
}

async function cpuPerOp(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), 'fs-op-cost-'))
  try {
    const list = await runners(root)
    for (const runner of list) await runner.prepare()
    for (const operation of OPERATIONS) {
      const samples = new Map<string, number[]>(list.map((r) => [r.name, []]))
      for (let round = 0; round < ROUNDS; round++) {
        // Each round starts at the next path, so no path always follows the same one.
        const order = list.map((_, index) => list[(index + round) % list.length] as Runner)
        for (const runner of order) {
          const run = runner.op(operation)
          for (let i = 0; i < 20; i++) await run(i)
          const start = process.cpuUsage()
          for (let i = 0; i < OPS; i++) await run(i)
          const used = process.cpuUsage(start)
          samples.get(runner.name)?.push((used.user + used.system) / OPS)
        }
      }
      const raw = median(samples.get('raw') ?? [])
      const cells = list.map((r) => {
        const us = median(samples.get(r.name) ?? [])
        return `${r.name} ${us.toFixed(1)} µs (${(us / raw).toFixed(2)}×)`
      })
      console.log(`cpu ${operation.padEnd(4)} ${cells.join(' | ')}`)
    }
    for (const runner of list) await runner.close()
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}

const [mode, pathName, operation] = process.argv.slice(2)
if (mode === 'child') {
  await child(pathName as string, operation as Operation)
} else {
  const names = [
    'raw',
    'log-floor',
    'agent-state',
    ...(process.env.FS_COST_BEFORE ? ['before'] : []),
  ]
  for (const op of process.env.FS_COST_STRACE === '0' ? [] : OPERATIONS) {
    for (const name of names) {
      const counts = countSyscalls(name, op)
      const total = [...counts.values()].reduce((a, b) => a + b, 0)
      const detail = [...counts.entries()]
        .filter(([, n]) => n >= 0.05)
        .sort((a, b) => b[1] - a[1])
        .map(([call, n]) => `${call} ${n.toFixed(2)}`)
        .join(', ')
      console.log(`syscalls ${op.padEnd(4)} ${name.padEnd(11)} ${total.toFixed(2)}/op: ${detail}`)
    }
  }
  console.log(
    `load average ${(await import('node:os'))
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  )
  await cpuPerOp()
}
