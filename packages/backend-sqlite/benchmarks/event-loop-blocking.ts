/**
 * How long one operation blocks the event loop. better-sqlite3 is
 * synchronous, so an operation's whole cost (including the fsync of a
 * `synchronous=FULL` commit) is spent on the calling thread before its
 * promise settles (mutations: in the group commit's flush, see
 * `src/group-commit.ts`). This measures that blocking time.
 *
 * Run: node --conditions=@agent-state/source --import tsx benchmarks/event-loop-blocking.ts
 * (from the package directory). Writes into a temp directory on the same
 * filesystem as os.tmpdir().
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Backend } from '@agent-state/core'
import { createSqliteBackend } from '../src/index.js'

interface Row {
  readonly case: string
  readonly ops: number
  readonly p50: number
  readonly p99: number
  readonly max: number
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] as number
}

/**
 * Times `op` from the call until it settles, `count` times, one at a time
 * with nothing else running. Reads run inside the call; a mutation is queued
 * by the call and run by the group commit's `setImmediate` flush (one
 * synchronous stretch: the transaction and its fsync). Either way the whole
 * time but one event-loop hop (about 1 µs) is spent blocking the thread.
 */
async function measure(
  name: string,
  count: number,
  op: (i: number) => Promise<unknown>,
): Promise<Row> {
  const samples: number[] = []
  for (let i = 0; i < count; i++) {
    const started = performance.now()
    await op(i)
    samples.push((performance.now() - started) * 1000)
  }
  samples.sort((a, b) => a - b)
  const round = (us: number): number => Math.round(us * 10) / 10
  return {
    case: name,
    ops: count,
    p50: round(percentile(samples, 50)),
    p99: round(percentile(samples, 99)),
    max: round(samples[samples.length - 1] as number),
  }
}

const dir = mkdtempSync(join(tmpdir(), 'agent-state-sqlite-bench-'))
const rows: Row[] = []
try {
  for (const synchronous of ['FULL', 'NORMAL'] as const) {
    const backend: Backend = createSqliteBackend({
      path: join(dir, `${synchronous}.db`),
      synchronous,
    })
    const kib = randomBytes(1024)
    rows.push(
      await measure(`put 1 KiB (${synchronous})`, 2000, (i) => backend.put(`k/${i % 1000}`, kib)),
    )
    let meta = await backend.put('cas', kib)
    rows.push(
      await measure(`put 1 KiB ifMatch (${synchronous})`, 1000, async () => {
        meta = await backend.put('cas', kib, { ifMatch: meta.version })
      }),
    )
    rows.push(
      await measure(`get 1 KiB (${synchronous})`, 2000, (i) => backend.get(`k/${i % 1000}`)),
    )
    rows.push(
      await measure(`list 1000 keys (${synchronous})`, 200, () => backend.list({ prefix: 'k/' })),
    )
    const lease = await backend.acquireLease('leased', { holder: 'bench', ttlMs: 60_000 })
    rows.push(
      await measure(`fenced put 1 KiB (${synchronous})`, 1000, () =>
        backend.put('leased', kib, { lease }),
      ),
    )
    if (synchronous === 'FULL') {
      const mib = randomBytes(1024 * 1024)
      rows.push(await measure('put 1 MiB (FULL)', 100, (i) => backend.put(`big/${i % 10}`, mib)))
      const big = randomBytes(16 * 1024 * 1024)
      rows.push(await measure('put 16 MiB (FULL)', 10, (i) => backend.put(`huge/${i % 2}`, big)))
      rows.push(await measure('get 16 MiB (FULL)', 10, (i) => backend.get(`huge/${i % 2}`)))
    }
    await backend.close()
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log('| case | ops | p50 µs | p99 µs | max µs |')
console.log('|---|---:|---:|---:|---:|')
for (const row of rows)
  console.log(`| ${row.case} | ${row.ops} | ${row.p50} | ${row.p99} | ${row.max} |`)
