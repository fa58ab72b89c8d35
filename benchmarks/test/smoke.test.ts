import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { combineRuns } from '../src/aggregate.js'
import { runBenchmarks } from '../src/bench.js'
import { readConfig } from '../src/config.js'
import { runTimed } from '../src/measure.js'
import { renderMarkdown } from '../src/report/markdown.js'
import { readPostgresResults } from '../src/report/postgres.js'
import { readmeHeadlineOf, renderReadmeHeadline } from '../src/report/readme.js'
import { type RunSummary, serializeSummary, summarizeRun } from '../src/report/summary.js'
import { renderRatioSvg } from '../src/report/svg.js'
import { meetsRawTarget, rawTargetOf } from '../src/report/targets.js'
import { renderReport } from '../src/report/write.js'
import type { CaseResult, SubjectResult } from '../src/runner.js'
import { openSubjects, Services } from '../src/services.js'
import { median, spreadOf } from '../src/stats.js'
import type { BackendKind, Subject } from '../src/subject.js'

/**
 * Keeps the benchmark code from rotting: every path of every backend runs a
 * functional round trip, then a few hundred operations through every
 * workload with tiny sizes. Nothing here is timed or compared.
 */

const BACKENDS: readonly BackendKind[] = ['memory', 'fs', 'sqlite', 'redis', 's3']

/** The paths each backend must offer; a missing or failing one fails the test. */
const EXPECTED_PATHS: Record<BackendKind, readonly string[]> = {
  memory: ['agent-state', 'raw', 'keyv', 'unstorage'],
  fs: ['agent-state', 'raw', 'unstorage'],
  sqlite: ['agent-state', 'raw', 'unstorage'],
  redis: ['agent-state', 'raw', 'keyv', 'unstorage'],
  s3: ['agent-state', 'raw', 'unstorage'],
}

const services = new Services()
const out = mkdtempSync(join(tmpdir(), 'agent-state-bench-smoke-'))

afterAll(async () => {
  await services.stop()
  rmSync(out, { recursive: true, force: true })
})

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text)

let round = 0

async function roundTrip(subject: Subject): Promise<void> {
  const run = `${Date.now()}-${round++}`
  const key = `smoke/${subject.path}/${run}/a`
  await subject.put(key, bytes('one'))
  expect(Buffer.from((await subject.get(key)) ?? []).toString()).toBe('one')
  expect(await subject.head(key)).toBe(true)
  await subject.delete(key)
  expect(await subject.get(key)).toBeNull()
  expect(await subject.head(key)).toBe(false)

  if (subject.path === 'agent-state' || subject.path === 'raw') {
    // The conditional paths must really be conditional.
    const casKey = `smoke/${subject.path}/${run}/cas`
    const casInit = subject.casInit as NonNullable<Subject['casInit']>
    const cas = subject.cas as NonNullable<Subject['cas']>
    const first = await casInit(casKey, bytes('v1'))
    const second = await cas(casKey, bytes('v2'), first)
    expect(Buffer.from((await subject.get(casKey)) ?? []).toString()).toBe('v2')
    if (!(subject.backend === 'fs' && subject.path === 'raw')) {
      // The raw fs write has no version to check (documented); every other one must refuse a stale token.
      await expect(cas(casKey, bytes('v3'), first)).rejects.toThrow()
      expect(Buffer.from((await subject.get(casKey)) ?? []).toString()).toBe('v2')
    }
    if (first !== undefined) expect(second).not.toBe(first)
    const createKey = `smoke/${subject.path}/${run}/created`
    const create = subject.create as NonNullable<Subject['create']>
    await create(createKey, bytes('c1'))
    await expect(create(createKey, bytes('c2'))).rejects.toThrow()
    expect(Buffer.from((await subject.get(createKey)) ?? []).toString()).toBe('c1')
    const leaseCycle = subject.leaseCycle as NonNullable<Subject['leaseCycle']>
    await leaseCycle(`smoke/${subject.path}/${run}/lease`)
    await leaseCycle(`smoke/${subject.path}/${run}/lease`)
  }

  if (subject.listPage !== undefined && subject.populate !== undefined) {
    const prefix = `smoke-list/${subject.path}/${run}/`
    await subject.populate(prefix, 25, bytes('x'))
    const seen: string[] = []
    let cursor: string | undefined
    for (let page = 0; page < 10; page++) {
      const result = await subject.listPage(prefix, 10, cursor)
      seen.push(...result.keys)
      cursor = result.cursor
      if (cursor === undefined) break
    }
    expect(seen).toEqual(
      Array.from({ length: 25 }, (_, i) => `${prefix}${String(i).padStart(7, '0')}`),
    )
  }
}

describe.each(BACKENDS)('benchmark paths on %s', (backend) => {
  it('every path does a correct round trip', async () => {
    const opened = await openSubjects(backend, services)
    try {
      expect(opened.subjects.map((subject) => subject.path)).toEqual(EXPECTED_PATHS[backend])
      for (const subject of opened.subjects) {
        subject.prepareFor?.(1)
        await roundTrip(subject)
        subject.prepareFor?.(4)
        await roundTrip(subject)
      }
    } finally {
      await opened.close()
    }
  })

  it('every workload runs through every path without an error', async () => {
    const config = readConfig(
      {},
      {
        backends: [backend],
        reps: 2,
        // Two full runs of one headline workload exercise the combination; more only cost time.
        runs: 2,
        headline: /^put-1KiB$/,
        repMs: 10,
        s3RepMs: 20,
        warmupMs: 5,
        concurrencies: [1, 4],
        valueSizes: [1024, 65536],
        listSizes: [1200],
        s3ListMax: 1200,
        keyspace: 8,
        deletePool: 10,
        outDir: out,
        markdownPath: join(out, 'BENCHMARKS.md'),
      },
    )
    const result = await runBenchmarks(config, services, () => {})
    expect(result.unavailable).toEqual({})
    const failures = result.cases.flatMap((row) =>
      row.subjects
        .filter((subject) => subject.error !== undefined)
        .map(
          (subject) => `${row.workload} c=${row.concurrency} ${subject.label}: ${subject.error}`,
        ),
    )
    expect(failures).toEqual([])
    const ids = new Set(result.cases.map((row) => row.workload))
    for (const id of [
      'put-1KiB',
      'cas',
      'create',
      'get-1KiB',
      'head',
      'delete',
      'lease',
      'put-64KiB',
      'get-64KiB',
      'list-1200',
      'put-at-1200',
      'get-at-1200',
    ]) {
      expect(ids).toContain(id)
    }
    let operations = 0
    for (const row of result.cases) {
      // Headline workloads ran in both full runs, the others once.
      expect(row.runs).toBe(row.workload === 'put-1KiB' ? 2 : 1)
      for (const subject of row.subjects) expect(subject.runs).toHaveLength(row.runs)
      // agent-state and the raw client run every workload; the ratio to raw exists for each.
      expect(row.subjects.map((subject) => subject.path)).toContain('agent-state')
      expect(row.subjects.map((subject) => subject.path)).toContain('raw')
      expect(row.ratios.map((ratio) => ratio.versus)).toContain('raw')
      for (const subject of row.subjects) {
        expect(subject.totalOps).toBeGreaterThan(0)
        operations += subject.totalOps
      }
    }
    expect(operations).toBeGreaterThan(200)
    expect(renderMarkdown(result)).toContain(`### ${backend}`)
    expect(renderRatioSvg(result)).toContain('</svg>')
    const headline = renderReadmeHeadline(result)
    expect(headline).toContain(`| ${backend} | put 1 KiB |`)
    expect(headline).toContain('the median of 2 full runs')
    // What is committed as results/latest.json: the summaries, which render exactly what the
    // full result (with every repetition and full run) renders.
    const summary = JSON.parse(serializeSummary(summarizeRun(result))) as RunSummary
    expect(summary.cases[0]?.subjects[0]).not.toHaveProperty('reps')
    expect(summary.cases[0]?.subjects[0]).not.toHaveProperty('runs')
    expect(renderMarkdown(summary)).toBe(renderMarkdown(result))
    expect(renderReadmeHeadline(summary)).toBe(headline)
    expect(renderRatioSvg(summary)).toBe(renderRatioSvg(result))
  })
})

describe('statistics of the report', () => {
  it('median and spread of known values leave failed (NaN) runs out', () => {
    expect(median([5, 1, 3])).toBe(3)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(spreadOf([2.5, 1, 9])).toEqual({ median: 2.5, min: 1, max: 9, n: 3 })
    expect(spreadOf([10, Number.NaN, 30, 20])).toEqual({ median: 20, min: 10, max: 30, n: 3 })
    expect(spreadOf([Number.NaN]).n).toBe(0)
  })

  const subject = (path: 'agent-state' | 'raw', ops: number, p50: number): SubjectResult => ({
    path,
    label: path,
    opsPerSec: ops,
    p50Us: p50,
    p99Us: p50 * 2,
    spread: { opsPerSec: spreadOf([ops]), p50Us: spreadOf([p50]), p99Us: spreadOf([p50 * 2]) },
    runs: [{ opsPerSec: ops, p50Us: p50, p99Us: p50 * 2 }],
    totalOps: 10,
    reps: [],
  })
  const run = (ours: number, raw: number, latency: number, throughput: number): CaseResult => ({
    backend: 'sqlite',
    workload: 'put-1KiB',
    op: 'put',
    title: 'put',
    concurrency: 64,
    valueBytes: 1024,
    runs: 1,
    subjects: [subject('agent-state', ours, 100), subject('raw', raw, 50)],
    ratios: [
      {
        versus: 'raw',
        label: 'raw',
        latency,
        throughput,
        latencySpread: spreadOf([latency]),
        throughputSpread: spreadOf([throughput]),
        latencyRuns: [latency],
        throughputRuns: [throughput],
      },
    ],
  })

  it('a cell of several full runs is the median run with the min–max, ratios from each run', () => {
    // A lucky run (9000 ops/s, 5x) must not set the cell.
    const combined = combineRuns([run(1000, 500, 2, 2), run(9000, 600, 1, 5), run(1200, 400, 3, 3)])
    expect(combined.runs).toBe(3)
    const ours = combined.subjects.find((entry) => entry.path === 'agent-state')
    expect(ours?.opsPerSec).toBe(1200)
    expect(ours?.spread.opsPerSec).toEqual({ median: 1200, min: 1000, max: 9000, n: 3 })
    expect(ours?.totalOps).toBe(30)
    const ratio = combined.ratios[0]
    // The median of the run ratios (3), not the ratio of the medians (1200 / 500 = 2.4).
    expect(ratio?.throughput).toBe(3)
    expect(ratio?.throughputSpread).toEqual({ median: 3, min: 2, max: 5, n: 3 })
    expect(ratio?.latencyRuns).toEqual([2, 1, 3])
    expect(ratio?.latency).toBe(2)
  })

  it('a path that failed in one run fails the cell and loses its ratios', () => {
    const broken = run(1000, 500, 2, 2)
    const failedRun: CaseResult = {
      ...broken,
      subjects: [
        broken.subjects[0] as SubjectResult,
        { ...(broken.subjects[1] as SubjectResult), error: 'Error: boom', opsPerSec: Number.NaN },
      ],
      ratios: [],
    }
    const combined = combineRuns([run(1000, 500, 2, 2), failedRun])
    expect(combined.subjects.find((entry) => entry.path === 'raw')?.error).toBe('Error: boom')
    expect(combined.ratios).toEqual([])
  })

  it("at c>1 a latency is the operation's own duration, not the time spent behind other callers", async () => {
    // A virtual clock: each operation takes exactly 100 ms of synchronous work
    // (like a better-sqlite3 statement). Issued back to back from one loop,
    // a caller would wait for the 7 others' work and see 800 ms.
    let clock = 0
    const measured = await runTimed(
      async () => {
        clock += 100
      },
      { concurrency: 8, durationMs: 2000, now: () => clock },
    )
    const latencies = measured.latencies.sorted()
    expect(measured.ops).toBeGreaterThanOrEqual(20)
    expect(latencies[0]).toBe(100_000)
    expect(latencies[latencies.length - 1]).toBe(100_000)
  })

  it("at c>1 an asynchronous operation's latency still includes its own wait", async () => {
    let clock = 0
    const measured = await runTimed(
      async () => {
        clock += 10
        await new Promise((resolve) => setImmediate(resolve))
        clock += 30
      },
      { concurrency: 4, durationMs: 1000, now: () => clock },
    )
    // Each op's own 40 plus the others' work that ran while it was in flight.
    const latencies = measured.latencies.sorted()
    expect(latencies[0]).toBeGreaterThanOrEqual(40_000)
    expect(measured.ops).toBeGreaterThan(0)
  })
})

describe('the targets against the raw client', () => {
  // Each cell has a p50 ratio and a throughput ratio that disagree, so a
  // verdict that judged c=64 by latency (or c=1 by throughput) fails here.
  const cell = (latency: number, throughput: number) => ({ latency, throughput })

  it('c=1 is judged by the p50 ratio (at most 1.15x), whatever the throughput', () => {
    const target = rawTargetOf('memory', 'get-1KiB', 1)
    expect(target).toEqual({ measure: 'p50', bound: 1.15 })
    expect(meetsRawTarget(target, cell(1.15, 0.5))).toBe(true)
    expect(meetsRawTarget(target, cell(1.16, 2))).toBe(false)
  })

  it('c=64 is judged by throughput (at least 0.87x), whatever the p50 ratio', () => {
    for (const [backend, workload] of [
      ['memory', 'put-1KiB'],
      ['redis', 'cas'],
      ['sqlite', 'get-1KiB'],
      ['fs', 'get-1KiB'],
      ['s3', 'put-1KiB'],
    ] as const) {
      const target = rawTargetOf(backend, workload, 64)
      expect(target, `${backend} ${workload}`).toEqual({ measure: 'ops/s', bound: 0.87 })
      // The committed run's fs get: a 0.013x p50 ratio against a thread-pool baseline.
      expect(meetsRawTarget(target, cell(0.013, 0.86))).toBe(false)
      expect(meetsRawTarget(target, cell(2.7, 0.87))).toBe(true)
    }
  })

  it('c=64 durable writes on fs and SQLite, whose batching is ours, need at least the raw throughput', () => {
    for (const backend of ['fs', 'sqlite'] as const) {
      for (const workload of ['put-1KiB', 'cas']) {
        const target = rawTargetOf(backend, workload, 64)
        expect(target, `${backend} ${workload}`).toEqual({ measure: 'ops/s', bound: 1 })
        expect(meetsRawTarget(target, cell(7.18, 0.99))).toBe(false)
        expect(meetsRawTarget(target, cell(7.18, 1))).toBe(true)
      }
    }
  })

  it('a cell without a ratio (a failed path) has no verdict', () => {
    expect(meetsRawTarget(rawTargetOf('redis', 'cas', 64), undefined)).toBeUndefined()
    expect(meetsRawTarget(rawTargetOf('redis', 'cas', 1), cell(Number.NaN, 1))).toBeUndefined()
  })
})

describe('the README headline table', () => {
  const root = join(import.meta.dirname, '..', '..')
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const result = JSON.parse(
    readFileSync(join(root, 'benchmarks', 'results', 'latest.json'), 'utf8'),
  ) as RunSummary

  it('is exactly what the committed results/latest.json renders (regenerate: pnpm bench or pnpm report)', () => {
    expect(readmeHeadlineOf(readme)).toBe(renderReadmeHeadline(result))
  })

  it('BENCHMARKS.md is too, and results/latest.json is the summaries, one case per line', () => {
    const postgres = readPostgresResults(join(root, 'benchmarks', 'results'))
    expect(
      postgres,
      'results/postgres.json (bench:postgres) renders the PostgreSQL section',
    ).toBeDefined()
    expect(readFileSync(join(root, 'BENCHMARKS.md'), 'utf8')).toBe(
      renderReport(result, join(root, 'benchmarks', 'results')),
    )
    const committed = readFileSync(join(root, 'benchmarks', 'results', 'latest.json'), 'utf8')
    expect(committed).toBe(serializeSummary(summarizeRun(result)))
  })

  it('covers every backend with put, CAS and get from several full runs, with the c=64 raw throughput', () => {
    const block = readmeHeadlineOf(readme) ?? ''
    for (const backend of BACKENDS) {
      for (const operation of ['put 1 KiB', 'compare-and-set', 'get 1 KiB']) {
        expect(block).toContain(`| ${backend} | ${operation} |`)
      }
    }
    // Both verdicts are there: c=1 by latency, c=64 by throughput.
    expect(block).toContain('| c=1 target | c=64 target |')
    expect(readFileSync(join(root, 'BENCHMARKS.md'), 'utf8')).toContain('| ops/s ≥ 0.87× |')
    for (const workload of ['put-1KiB', 'cas', 'get-1KiB']) {
      for (const row of result.cases.filter((entry) => entry.workload === workload)) {
        expect(row.runs).toBeGreaterThanOrEqual(3)
        if (row.concurrency === 64) {
          const raw = row.subjects.find((subject) => subject.path === 'raw')
          expect(raw?.spread.opsPerSec.n).toBeGreaterThanOrEqual(3)
        }
      }
    }
  })
})
