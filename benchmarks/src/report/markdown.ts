import type { BackendKind, PathKind } from '../subject.js'
import { countLabel } from '../workloads.js'
import { escapeCell, formatMicros, formatRate, formatRatio, formatSpread } from './format.js'
import { type PostgresResults, renderPostgresSection } from './postgres.js'
import type { CaseSummary, RatioSummary, RunSummary, SubjectSummary } from './summary.js'
import {
  CONCURRENT_THROUGHPUT_TARGET,
  DURABLE_WRITE_THROUGHPUT_TARGET,
  describeTarget,
  LATENCY_TARGET,
  meetsRawTarget,
  PEER_THROUGHPUT_TARGET,
  rawTargetOf,
} from './targets.js'

const BACKEND_ORDER: readonly BackendKind[] = ['memory', 'fs', 'sqlite', 'redis', 's3']
/** The peer libraries, compared in the Target 2 table. */
const PEERS: readonly PathKind[] = ['keyv', 'unstorage']

function subjectOf(result: CaseSummary, path: PathKind): SubjectSummary | undefined {
  return result.subjects.find((subject) => subject.path === path)
}

function ratioOf(result: CaseSummary, path: PathKind): RatioSummary | undefined {
  return result.ratios.find((ratio) => ratio.versus === path)
}

function find(
  cases: readonly CaseSummary[],
  backend: BackendKind,
  workload: string,
  concurrency: number,
): CaseSummary | undefined {
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

/** The workloads of the headline table: every figure of these cases is there, and only there. */
const HEADLINE_WORKLOADS = ['put-1KiB', 'cas', 'get-1KiB']

function isHeadline(row: CaseSummary): boolean {
  return HEADLINE_WORKLOADS.includes(row.workload) && row.population === undefined
}

/**
 * Target 1 and the headline figures in one table: per backend, operation and
 * concurrency, agent-state's and the raw client's ops/s, p50 and p99, the
 * ratios, and the verdict: p50 against {@link LATENCY_TARGET} at c=1,
 * throughput against {@link CONCURRENT_THROUGHPUT_TARGET} (durable fs and
 * SQLite writes: {@link DURABLE_WRITE_THROUGHPUT_TARGET}) above it.
 */
function headlineTable(result: RunSummary): string[] {
  const lines = [
    `| backend | operation | conc | runs | agent-state ops/s · p50 · p99 | raw ops/s · p50 · p99 | ratio p50 | ratio ops/s | target | verdict |`,
    '|---|---|---:|---:|---:|---:|---:|---:|---|---|',
  ]
  const figures = (subject: SubjectSummary | undefined): string =>
    [
      formatSpread(subject?.spread.opsPerSec, formatRate),
      formatSpread(subject?.spread.p50Us, formatMicros),
      formatSpread(subject?.spread.p99Us, formatMicros),
    ].join(' · ')
  for (const backend of BACKEND_ORDER) {
    for (const workload of HEADLINE_WORKLOADS) {
      for (const concurrency of result.config.concurrencies as number[]) {
        const row = find(result.cases, backend, workload, concurrency)
        if (row === undefined) continue
        const ratio = ratioOf(row, 'raw')
        const target = rawTargetOf(backend, workload, concurrency)
        lines.push(
          `| ${backend} | ${workload} | ${concurrency} | ${row.runs} | ${figures(subjectOf(row, 'agent-state'))} | ${figures(subjectOf(row, 'raw'))} | ${formatSpread(ratio?.latencySpread, formatRatio)} | ${formatSpread(ratio?.throughputSpread, formatRatio)} | ${describeTarget(target)} | ${verdict(meetsRawTarget(target, ratio))} |`,
        )
      }
    }
  }
  return lines
}

function throughputTargetTable(result: RunSummary): string[] {
  const lines = [
    `| backend | operation | conc | ops/s ratio vs Keyv | ops/s ratio vs unstorage | target ≥ ${PEER_THROUGHPUT_TARGET}× |`,
    '|---|---|---:|---:|---:|---|',
  ]
  for (const backend of BACKEND_ORDER) {
    for (const row of result.cases) {
      if (row.backend !== backend || row.population !== undefined) continue
      const keyv = ratioOf(row, 'keyv')
      const uns = ratioOf(row, 'unstorage')
      if (keyv === undefined && uns === undefined) continue
      const ratios = [keyv?.throughput, uns?.throughput].filter((value) => value !== undefined)
      const ok =
        ratios.length === 0 ? undefined : ratios.every((value) => value >= PEER_THROUGHPUT_TARGET)
      lines.push(
        `| ${backend} | ${row.workload} | ${row.concurrency} | ${formatRatio(keyv?.throughput)} | ${formatRatio(uns?.throughput)} | ${verdict(ok)} |`,
      )
    }
  }
  return lines
}

function growthTable(result: RunSummary): string[] {
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

/**
 * Every other figure of one backend: each case not in the headline or growth
 * tables, and the peers' figures of the headline cases (`↑`: in the headline
 * table). The ratio column is vs the raw client; the ratios vs Keyv and
 * unstorage are in the Target 2 table.
 */
function fullTable(result: RunSummary, backend: BackendKind): string[] {
  const rows = result.cases.filter(
    (row) =>
      row.backend === backend &&
      row.population === undefined &&
      (!isHeadline(row) || row.subjects.some((subject) => PEERS.includes(subject.path))),
  )
  if (rows.length === 0) return []
  const paths: PathKind[] = ['agent-state', 'raw', 'keyv', 'unstorage']
  const present = paths.filter((path) => rows.some((row) => subjectOf(row, path) !== undefined))
  const labels = present.map(
    (path) =>
      rows.flatMap((row) => row.subjects).find((subject) => subject.path === path)?.label ?? path,
  )
  const lines = [
    `| workload | conc | ${labels.map((label) => `${escapeCell(label)} ops/s · p50 · p99`).join(' | ')} | ratio vs raw (p50; ops/s) |`,
    `|---|---:|${present.map(() => '---:').join('|')}|---|`,
  ]
  for (const row of rows) {
    const headline = isHeadline(row)
    const cells = present.map((path) => {
      if (headline && !PEERS.includes(path)) return '↑'
      const subject = subjectOf(row, path)
      if (subject === undefined) return 'n/a'
      if (subject.error !== undefined) return `FAILED: ${escapeCell(subject.error.slice(0, 80))}`
      return `${formatRate(subject.opsPerSec)} · ${formatMicros(subject.p50Us)} · ${formatMicros(subject.p99Us)}`
    })
    const raw = ratioOf(row, 'raw')
    const ratio = headline
      ? '↑'
      : raw === undefined
        ? '–'
        : `${formatRatio(raw.latency)}; ${formatRatio(raw.throughput)}`
    lines.push(`| ${row.workload} | ${row.concurrency} | ${cells.join(' | ')} | ${ratio} |`)
  }
  return lines
}

function notesTable(result: RunSummary, backend: BackendKind): string[] {
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
 * the targets, the growth from 1k to 100k keys and the full tables, each
 * figure in one table only. The hand-written analysis, `benchmarks/FINDINGS.md`,
 * is linked, not copied.
 */
export function renderMarkdown(
  result: RunSummary,
  postgres?: PostgresResults,
  sections: readonly (readonly string[] | undefined)[] = [],
): string {
  const machine = result.machine
  const versions = Object.entries(result.versions)
    .map(([name, version]) => `${name} ${version}`)
    .join(', ')
  const config = result.config
  const out: string[] = [
    '# agent-state benchmarks',
    '',
    'Generated by `npx -y pnpm@12.4.2 bench` (`benchmarks/`) from the summaries in `benchmarks/results/latest.json`;',
    'the analysis is [benchmarks/FINDINGS.md](benchmarks/FINDINGS.md). Chart in',
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
    '## Target 1: agent-state vs the raw client (put, compare-and-set, get; 1 KiB)',
    '',
    'The raw client does the least equivalent work (see the notes under each backend). For fs, a file write',
    'has no compare-and-set, so the CAS row compares with the plain durable atomic write: the physical limit.',
    'put and compare-and-set are the durable writes (fsync per commit on fs and SQLite; Redis: AOF everysec;',
    'S3: RGW memstore). The README quotes both concurrencies of this table.',
    '',
    `Targets: at c=1 the p50 latency, at most ${LATENCY_TARGET}× the raw client's. Above c=1 the throughput, at least`,
    `${CONCURRENT_THROUGHPUT_TARGET}× the raw client's (${DURABLE_WRITE_THROUGHPUT_TARGET}× for the fs and SQLite durable writes, where batching concurrent`,
    "commits is the backend's to use). A p50 ratio above c=1 compares different things: a synchronous baseline",
    "(better-sqlite3, the fs sync calls) reports one statement's duration and leaves out the time its callers",
    "wait behind each other, while a batching path's latency is its batch. The c=64 latencies are information.",
    '',
    ...headlineTable(result),
    '',
    '## Target 2: agent-state throughput vs Keyv and unstorage (same server or disk)',
    '',
    'Keyv and unstorage have no compare-and-set, create-if-absent or leases: their `cas` and `create` rows are',
    'plain sets (last writer wins), so those rows compare a safe write with an unsafe one. The ops/s of every',
    'path are in the full results below.',
    '',
    ...throughputTargetTable(result),
    '',
    '## Growth from 1k to 100k keys (p50 at concurrency 1)',
    '',
    'A listing page must stay flat as the population grows; put and get must not grow with the number of keys.',
    '',
    ...growthTable(result),
    '',
    ...(postgres === undefined ? [] : [...renderPostgresSection(postgres), '']),
    ...sections.flatMap((section) => section ?? []),
    '## Full results',
    '',
    'Each cell: ops/s · p50 · p99. `↑`: in the Target 1 table (the headline workloads, with their ranges over',
    'the full runs); the growth cases are in the growth table. `n/a`: the path has no such operation.',
  )
  for (const backend of BACKEND_ORDER) {
    const table = fullTable(result, backend)
    if (table.length === 0) continue
    out.push('', `### ${backend}`, '', ...table, ...notesTable(result, backend))
  }
  out.push('')
  return out.join('\n')
}
