import { existsSync, readFileSync } from 'node:fs'
import type { RunResult } from '../bench.js'
import type { CaseResult, Ratio, SubjectResult } from '../runner.js'
import type { BackendKind, PathKind } from '../subject.js'
import { countLabel } from '../workloads.js'
import { escapeCell, formatMicros, formatRate, formatRatio, formatSpread } from './format.js'

/** The latency target: agent-state p50 at most this multiple of the raw client's (put, CAS, get). */
export const LATENCY_TARGET = 1.15
/** The throughput target: agent-state ops/s at least this multiple of each peer's. */
export const THROUGHPUT_TARGET = 1.0

const BACKEND_ORDER: readonly BackendKind[] = ['memory', 'fs', 'sqlite', 'redis', 's3']

function subjectOf(result: CaseResult, path: PathKind): SubjectResult | undefined {
  return result.subjects.find((subject) => subject.path === path)
}

function ratioOf(result: CaseResult, path: PathKind): Ratio | undefined {
  return result.ratios.find((ratio) => ratio.versus === path)
}

function find(
  cases: readonly CaseResult[],
  backend: BackendKind,
  workload: string,
  concurrency: number,
): CaseResult | undefined {
  return cases.find(
    (result) =>
      result.backend === backend &&
      result.workload === workload &&
      result.concurrency === concurrency,
  )
}

function verdict(ok: boolean | undefined): string {
  if (ok === undefined) return '–'
  return ok ? 'met' : '**missed**'
}

function latencyTargetTable(result: RunResult): string[] {
  const lines = [
    `| backend | operation | conc | runs | agent-state p50 | raw p50 | ratio (p50) | target ≤ ${LATENCY_TARGET}× |`,
    '|---|---|---:|---:|---:|---:|---:|---|',
  ]
  for (const backend of BACKEND_ORDER) {
    for (const workload of ['put-1KiB', 'cas', 'get-1KiB']) {
      for (const concurrency of result.config.concurrencies as number[]) {
        const row = find(result.cases, backend, workload, concurrency)
        if (row === undefined) continue
        const ours = subjectOf(row, 'agent-state')
        const raw = subjectOf(row, 'raw')
        const ratio = ratioOf(row, 'raw')
        lines.push(
          `| ${backend} | ${workload} | ${concurrency} | ${row.runs} | ${formatSpread(ours?.spread.p50Us, formatMicros)} | ${formatSpread(raw?.spread.p50Us, formatMicros)} | ${formatSpread(ratio?.latencySpread, formatRatio)} | ${verdict(ratio === undefined ? undefined : ratio.latency <= LATENCY_TARGET)} |`,
        )
      }
    }
  }
  return lines
}

/** Throughput of agent-state and of the raw client at the highest concurrency, for the headline operations. */
function headlineThroughputTable(result: RunResult): string[] {
  const concurrency = Math.max(...(result.config.concurrencies as number[]))
  const lines = [
    `| backend | operation | conc | runs | agent-state ops/s | raw ops/s | ratio (ops/s) | agent-state p99 | raw p99 |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---:|',
  ]
  for (const backend of BACKEND_ORDER) {
    for (const workload of ['put-1KiB', 'cas', 'get-1KiB']) {
      const row = find(result.cases, backend, workload, concurrency)
      if (row === undefined) continue
      const ours = subjectOf(row, 'agent-state')
      const raw = subjectOf(row, 'raw')
      lines.push(
        `| ${backend} | ${workload} | ${concurrency} | ${row.runs} | ${formatSpread(ours?.spread.opsPerSec, formatRate)} | ${formatSpread(raw?.spread.opsPerSec, formatRate)} | ${formatSpread(ratioOf(row, 'raw')?.throughputSpread, formatRatio)} | ${formatSpread(ours?.spread.p99Us, formatMicros)} | ${formatSpread(raw?.spread.p99Us, formatMicros)} |`,
      )
    }
  }
  return lines
}

function throughputTargetTable(result: RunResult): string[] {
  const lines = [
    `| backend | operation | conc | agent-state ops/s | Keyv ops/s | ratio vs Keyv | unstorage ops/s | ratio vs unstorage | target ≥ ${THROUGHPUT_TARGET}× |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---|',
  ]
  for (const backend of BACKEND_ORDER) {
    for (const row of result.cases) {
      if (row.backend !== backend || row.population !== undefined) continue
      const keyv = ratioOf(row, 'keyv')
      const uns = ratioOf(row, 'unstorage')
      if (keyv === undefined && uns === undefined) continue
      const ratios = [keyv?.throughput, uns?.throughput].filter((value) => value !== undefined)
      const ok =
        ratios.length === 0 ? undefined : ratios.every((value) => value >= THROUGHPUT_TARGET)
      lines.push(
        `| ${backend} | ${row.workload} | ${row.concurrency} | ${formatRate(subjectOf(row, 'agent-state')?.opsPerSec ?? Number.NaN)} | ${formatRate(subjectOf(row, 'keyv')?.opsPerSec ?? Number.NaN)} | ${formatRatio(keyv?.throughput)} | ${formatRate(subjectOf(row, 'unstorage')?.opsPerSec ?? Number.NaN)} | ${formatRatio(uns?.throughput)} | ${verdict(ok)} |`,
      )
    }
  }
  return lines
}

function growthTable(result: RunResult): string[] {
  const sizes = result.config.listSizes as number[]
  const header = sizes.map((size) => `${size.toLocaleString('en-US')} keys`)
  const lines = [
    `| backend | path | measure (p50, c=1) | ${header.join(' | ')} |`,
    `|---|---|---|${sizes.map(() => '---:').join('|')}|`,
  ]
  const measures: [string, (size: number) => string][] = [
    ['list page of 1000', (size) => `list-${countLabel(size)}`],
    ['put 1 KiB', (size) => `put-at-${countLabel(size)}`],
    ['get 1 KiB', (size) => `get-at-${countLabel(size)}`],
  ]
  for (const backend of BACKEND_ORDER) {
    for (const path of ['agent-state', 'raw'] as const) {
      for (const [label, id] of measures) {
        const cells = sizes.map((size) => {
          const row = find(result.cases, backend, id(size), 1)
          return row === undefined ? '–' : formatMicros(subjectOf(row, path)?.p50Us ?? Number.NaN)
        })
        if (cells.every((cell) => cell === '–')) continue
        lines.push(`| ${backend} | ${path} | ${label} | ${cells.join(' | ')} |`)
      }
    }
  }
  return lines
}

function fullTable(result: RunResult, backend: BackendKind): string[] {
  const rows = result.cases.filter((row) => row.backend === backend)
  if (rows.length === 0) return []
  const paths: PathKind[] = ['agent-state', 'raw', 'keyv', 'unstorage']
  const present = paths.filter((path) => rows.some((row) => subjectOf(row, path) !== undefined))
  const labels = present.map(
    (path) =>
      rows.flatMap((row) => row.subjects).find((subject) => subject.path === path)?.label ?? path,
  )
  const lines = [
    `| workload | conc | ${labels.map((label) => `${escapeCell(label)} ops/s · p50 · p99`).join(' | ')} | ratio vs ${present
      .slice(1)
      .join(' / ')} (p50 latency; ops/s) |`,
    `|---|---:|${present.map(() => '---:').join('|')}|---|`,
  ]
  for (const row of rows) {
    const cells = present.map((path) => {
      const subject = subjectOf(row, path)
      if (subject === undefined) return 'n/a'
      if (subject.error !== undefined) return `FAILED: ${escapeCell(subject.error.slice(0, 80))}`
      return `${formatRate(subject.opsPerSec)} · ${formatMicros(subject.p50Us)} · ${formatMicros(subject.p99Us)}`
    })
    const ratios = present
      .slice(1)
      .map((path) => {
        const ratio = ratioOf(row, path)
        return ratio === undefined
          ? '–'
          : `${formatRatio(ratio.latency)}; ${formatRatio(ratio.throughput)}`
      })
      .join(' / ')
    lines.push(`| ${row.workload} | ${row.concurrency} | ${cells.join(' | ')} | ${ratios} |`)
  }
  return lines
}

function notesTable(result: RunResult, backend: BackendKind): string[] {
  const seen = new Map<string, string>()
  for (const row of result.cases) {
    if (row.backend !== backend) continue
    for (const subject of row.subjects) {
      if (subject.note !== undefined) seen.set(`${subject.label}|${row.op}`, subject.note)
    }
  }
  if (seen.size === 0) return []
  const lines = ['', '| path | operation | what it does |', '|---|---|---|']
  for (const [key, note] of seen) {
    const [label, op] = key.split('|') as [string, string]
    lines.push(`| ${escapeCell(label)} | ${op} | ${escapeCell(note)} |`)
  }
  return lines
}

/**
 * `BENCHMARKS.md`: machine, versions and date, the headline ratios against
 * the targets, the growth from 1k to 100k keys and the full tables. A
 * hand-written `benchmarks/FINDINGS.md`, when present, is appended.
 */
export function renderMarkdown(result: RunResult, findingsPath?: string): string {
  const machine = result.machine
  const versions = Object.entries(result.versions)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ')
  const config = result.config
  const out: string[] = [
    '# agent-state benchmarks',
    '',
    'Generated by `npx -y pnpm@12.4.2 bench` (`benchmarks/`); raw data in `benchmarks/results/latest.json`, chart in',
    '`benchmarks/results/ratios.svg`. Every path of a backend runs in the same process against the same',
    'server or disk, and the paths are interleaved per repetition (the order rotates), so scheduler and',
    'disk noise hit them alike. Ratios are agent-state divided by the other path, computed per repetition,',
    'then the median over the repetitions is taken. Latency ratio: lower is better for agent-state.',
    'Throughput ratio: higher is better.',
    '',
    `The headline workloads (\`${String(config.headline ?? '')}\`) are measured in ${String(config.runs ?? 1)} full runs spread over the`,
    'whole benchmark (each: set-up, warm-up and the timed repetitions, every backend in turn); their cells give',
    'the median over the runs and, in brackets, the [min–max] over the runs. A ratio is computed within each run',
    'and the median of the run ratios is quoted. The other workloads run once.',
    '',
    '![agent-state throughput ratios and latency ratios](benchmarks/results/ratios.svg)',
    '',
    '## Run',
    '',
    '| | |',
    '|---|---|',
    `| date | ${result.startedAt} → ${result.finishedAt} (${result.durationS} s) |`,
    `| machine | ${machine.cpuCount} × ${machine.cpus}, ${machine.memoryGiB} GiB RAM, ${machine.os}${machine.note === undefined ? '' : `; ${escapeCell(machine.note)}`} |`,
    `| load average (1/5/15 min) | start ${machine.loadAvgStart.map((n) => n.toFixed(2)).join(' ')}, end ${machine.loadAvgEnd.map((n) => n.toFixed(2)).join(' ')} |`,
    `| versions | ${versions} |`,
    `| timing | per case and run: warm-up ${config.warmupMs} ms per path, then ${config.reps} repetitions of ${config.repMs} ms (S3: ${config.s3RepMs} ms) per path, interleaved; ops/s = median of the repetitions, p50/p99 from the run's pooled per-op latencies; headline cells: median [min–max] over ${String(config.runs ?? 1)} full runs |`,
    `| latency | closed loop: each of c callers issues its next operation only when its previous one settled (at most c in flight). A latency is one operation's own duration, from the call into the backend until its caller resumes after the promise settled. It includes every wait inside the backend and its client library (locks, a group commit's batch, libuv's 4-thread pool queue for fs, the server's queue, the socket pool). Above c=1 each caller issues from its own macrotask (\`setImmediate\`), so the harness never starts another operation between a settle and its timestamp: a synchronous backend (better-sqlite3) does not bill one caller for the other callers' statements, and no latency includes time queued in the harness before issue. An I/O completion that arrives while the one JS thread runs another operation still waits for it (the event loop is the client's) |`,
    `| sizes | keyspace ${config.keyspace} keys (1 MiB: 32, 64 KiB: 64), delete pool ${config.deletePool ?? 'per backend (memory 20 000, fs 300, SQLite 1000, Redis 3000, S3 100)'} keys per delete run (also the create budget per run), listing populations ${(config.listSizes as number[]).join(', ')} (S3 at most ${config.s3ListMax}) |`,
  ]
  for (const backend of BACKEND_ORDER) {
    const setup = result.setups[backend]
    if (setup !== undefined) out.push(`| ${backend} | ${escapeCell(setup.storage ?? '')} |`)
    if (setup?.commandstats !== undefined && setup.commandstats !== '') {
      out.push(`| ${backend} server time | ${escapeCell(setup.commandstats)} |`)
    }
    const missing = result.unavailable[backend]
    if (missing !== undefined) out.push(`| ${backend} | **not run**: ${escapeCell(missing)} |`)
  }
  out.push(
    '',
    '## Target 1: agent-state latency vs the raw client (put, compare-and-set, get; 1 KiB)',
    '',
    'The raw client does the least equivalent work (see the notes under each backend). For fs, a file write',
    'has no compare-and-set, so the CAS row compares with the plain durable atomic write: the physical limit.',
    '',
    ...latencyTargetTable(result),
    '',
    '## Throughput at the highest concurrency vs the raw client (put, compare-and-set, get; 1 KiB)',
    '',
    'put and compare-and-set are the durable writes (fsync per commit on fs and SQLite; Redis: AOF everysec;',
    'S3: RGW memstore). The README quotes this table.',
    '',
    ...headlineThroughputTable(result),
    '',
    '## Target 2: agent-state throughput vs Keyv and unstorage (same server or disk)',
    '',
    'Keyv and unstorage have no compare-and-set, create-if-absent or leases: their `cas` and `create` rows are',
    'plain sets (last writer wins), so those rows compare a safe write with an unsafe one.',
    '',
    ...throughputTargetTable(result),
    '',
    '## Growth from 1k to 100k keys (p50 at concurrency 1)',
    '',
    'A listing page must stay flat as the population grows; put and get must not grow with the number of keys.',
    '',
    ...growthTable(result),
    '',
    '## Full results',
    '',
    'Each cell: ops/s · p50 · p99 (headline workloads: medians over the full runs; their ranges are in the',
    'tables above and in `latest.json`). `n/a`: the path has no such operation.',
  )
  for (const backend of BACKEND_ORDER) {
    const table = fullTable(result, backend)
    if (table.length === 0) continue
    out.push('', `### ${backend}`, '', ...table, ...notesTable(result, backend))
  }
  if (findingsPath !== undefined && existsSync(findingsPath)) {
    out.push('', readFileSync(findingsPath, 'utf8').trimEnd())
  }
  out.push('')
  return out.join('\n')
}
