// Benchmark: put + getTuple + list of @agent-state/langgraph against
// @langchain/langgraph-checkpoint-sqlite on the same disk, interleaved per
// repetition, median latencies and their ratios. Run: `npx -y pnpm@12.4.2
// --filter @agent-state/langgraph bench` (writes BENCHMARKS.md beside this package).
// The Redis checkpointer (@langchain/langgraph-checkpoint-redis) needs the
// RedisJSON and RediSearch modules, which the Debian redis-server 7.0 lacks,
// so agent-state on Redis is measured alone.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import type { Backend } from '@agent-state/core'
import { createFsBackend } from '@agent-state/fs'
import { createRedisBackend } from '@agent-state/redis'
import { createSqliteBackend } from '@agent-state/sqlite'
import { startRedisServer } from '@agent-state/test-services'
import type { RunnableConfig } from '@langchain/core/runnables'
import {
  type BaseCheckpointSaver,
  type Checkpoint,
  emptyCheckpoint,
  uuid6,
} from '@langchain/langgraph-checkpoint'
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import { createCheckpointSaver } from '../src/index.js'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 100)
const REPETITIONS = Number(process.env.BENCH_REPETITIONS ?? 5)
const VALUE = 'x'.repeat(1024)

interface Subject {
  readonly name: string
  readonly saver: BaseCheckpointSaver
  readonly close: () => Promise<void>
}

type Op = 'put' | 'getTuple' | 'list(limit 10)'
const OPS: readonly Op[] = ['put', 'getTuple', 'list(limit 10)']

/** One thread of ROUNDS steps: a 1 KiB channel that changes every step and one that never does. */
async function runThread(saver: BaseCheckpointSaver, samples: Record<Op, number[]>): Promise<void> {
  let config: RunnableConfig = { configurable: { thread_id: uuid6(-3), checkpoint_ns: '' } }
  let version = 0
  for (let step = 0; step < ROUNDS; step++) {
    version = Math.floor(version) + 1
    const checkpoint: Checkpoint = {
      ...emptyCheckpoint(),
      id: uuid6(-3),
      channel_values: { messages: `${VALUE}${step}`, constant: 'same' },
      channel_versions: { messages: version, constant: 1 },
    }
    const newVersions = step === 0 ? { messages: version, constant: 1 } : { messages: version }
    let started = performance.now()
    config = await saver.put(config, checkpoint, { source: 'loop', step, parents: {} }, newVersions)
    samples.put.push(performance.now() - started)
    started = performance.now()
    const latest = await saver.getTuple({
      configurable: { thread_id: config.configurable?.thread_id },
    })
    samples.getTuple.push(performance.now() - started)
    if (latest?.checkpoint.id !== checkpoint.id)
      throw new Error('getTuple did not return the latest')
    started = performance.now()
    let listed = 0
    for await (const _tuple of saver.list(
      { configurable: { thread_id: config.configurable?.thread_id } },
      { limit: 10 },
    )) {
      listed++
    }
    samples['list(limit 10)'].push(performance.now() - started)
    if (listed !== Math.min(10, step + 1)) throw new Error(`list returned ${listed}`)
  }
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'agent-state-langgraph-bench-'))
  const redis = await startRedisServer()
  const ours = (name: string, backend: Backend): Subject => ({
    name,
    saver: createCheckpointSaver({ backend }),
    close: () => backend.close(),
  })
  const peer = SqliteSaver.fromConnString(join(dir, 'peer.db'))
  const subjects: Subject[] = [
    {
      name: 'langgraph-checkpoint-sqlite',
      saver: peer,
      close: async () => {
        peer.db.close()
      },
    },
    ours(
      'agent-state sqlite (synchronous=FULL)',
      createSqliteBackend({ path: join(dir, 'ours.db') }),
    ),
    ours(
      'agent-state sqlite (synchronous=NORMAL)',
      createSqliteBackend({ path: join(dir, 'ours-normal.db'), synchronous: 'NORMAL' }),
    ),
    ours('agent-state fs', createFsBackend({ root: join(dir, 'fs') })),
    ours(
      'agent-state redis',
      createRedisBackend({ host: redis.host, port: redis.port, namespace: 'bench' }),
    ),
  ]
  const samples = new Map(
    subjects.map((s) => [
      s.name,
      { put: [], getTuple: [], 'list(limit 10)': [] } as Record<Op, number[]>,
    ]),
  )
  // Read after the run: the saver switches to WAL on first use, and better-sqlite3's build
  // then lowers an unset `synchronous` to its WAL default.
  let peerSync: unknown = 'unknown'
  try {
    for (let rep = 0; rep < REPETITIONS; rep++) {
      for (const subject of subjects)
        await runThread(subject.saver, samples.get(subject.name) as Record<Op, number[]>)
    }
    peerSync = peer.db.pragma('synchronous', { simple: true })
  } finally {
    for (const subject of subjects) await subject.close()
    await redis.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  const base = samples.get('langgraph-checkpoint-sqlite') as Record<Op, number[]>
  const rows = subjects.map((subject) => {
    const own = samples.get(subject.name) as Record<Op, number[]>
    const cells = OPS.map((op) => {
      const ms = median(own[op])
      const ratio = ms / median(base[op])
      return `${ms.toFixed(3)} ms (${ratio.toFixed(2)}×)`
    })
    return `| ${subject.name} | ${cells.join(' | ')} |`
  })
  const report = [
    '# @agent-state/langgraph benchmarks',
    '',
    `Run of ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC, Node ${process.version}, ${ROUNDS} steps per thread × ${REPETITIONS} repetitions, subjects interleaved per repetition. Each step: \`put\` of a checkpoint with a 1 KiB channel that changes and one that does not, \`getTuple\` of the latest, \`list\` with \`limit: 10\`. Median latency, in brackets the ratio to \`@langchain/langgraph-checkpoint-sqlite\` 1.0.4 on the same disk (its database runs WAL with \`synchronous\` = ${String(peerSync)}, 1 = NORMAL: no fsync per commit; compare it with the NORMAL row). Command: \`npx -y pnpm@12.4.2 --filter @agent-state/langgraph bench\`.`,
    '',
    `| saver | ${OPS.join(' | ')} |`,
    `|---|${OPS.map(() => '---').join('|')}|`,
    ...rows,
    '',
    'The Redis checkpointer (`@langchain/langgraph-checkpoint-redis` 1.0.11) needs the RedisJSON and RediSearch modules (Redis Stack or Redis 8); the Debian `redis-server` 7.0 here has neither, so agent-state on Redis has no peer row.',
    '',
  ].join('\n')
  writeFileSync(new URL('../BENCHMARKS.md', import.meta.url), report)
  console.log(report)
}

await main()
