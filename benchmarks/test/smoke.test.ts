import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runBenchmarks } from '../src/bench.js'
import { readConfig } from '../src/config.js'
import { renderMarkdown } from '../src/report/markdown.js'
import { renderRatioSvg } from '../src/report/svg.js'
import { openSubjects, Services } from '../src/services.js'
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
  })
})
