/**
 * Where a native SQLite trigger's time goes (benchmarks/FINDINGS.md, "SQLite
 * native path"): p50 of the group commit's wait alone (a `setImmediate`
 * hop), a 100-byte `put`, `nativeQueue.queueAppend` called directly and
 * `queue.trigger` through the runtime, one after another on one instance
 * with `synchronous = NORMAL` (plainjob's setting).
 *
 *   node --conditions=@agent-state/source --import tsx --no-warnings src/queue-append-cost.ts
 *
 * Knob: `QUEUE_APPEND_COST_OPS` (timed operations per row, default 2000).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NativeQueue } from '@agent-state/core'
import { createDaemonQueue } from '@agent-state/runtime'
import { daemonEventKey, daemonHeadKey, daemonTailKey } from '@agent-state/runtime/internal'
import { createSqliteBackend } from '@agent-state/sqlite'

const ops = Number(process.env.QUEUE_APPEND_COST_OPS ?? 2000)
const dir = mkdtempSync(join(tmpdir(), 'agent-state-append-cost-'))
const backend = createSqliteBackend({
  path: join(dir, 'queue.db'),
  namespace: 'cost',
  synchronous: 'NORMAL',
})
try {
  const queue = await createDaemonQueue(backend, 'd', { path: 'native', capacity: 1_000_000 })
  const native = backend.nativeQueue as NativeQueue
  const eventPrefix = daemonEventKey('d', 0).replace(/0+$/, '')
  const keys = {
    head: daemonHeadKey('d'),
    tail: daemonTailKey('d'),
    eventPrefix,
    eventDigits: daemonEventKey('d', 0).length - eventPrefix.length,
  }
  const event = ',"eventId":"x","event":{"a":1},"triggeredAt":"2026-12-03T00:00:00.000Z"}'

  /** Prints the p50 in ms of `ops` awaited calls of `call`, after 200 untimed ones. */
  const p50 = async (label: string, call: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < 200; i++) await call(i)
    const samples: number[] = []
    for (let i = 0; i < ops; i++) {
      const started = performance.now()
      await call(i)
      samples.push(performance.now() - started)
    }
    samples.sort((a, b) => a - b)
    console.log(`${label}: p50 ${(samples[Math.floor(ops / 2)] as number).toFixed(4)} ms`)
  }
  await p50('setImmediate hop', () => new Promise((resolve) => setImmediate(resolve)))
  await p50('put of 100 bytes', (i) => backend.put(`k/${i % 10}`, new Uint8Array(100)))
  await p50('queueAppend, direct', () =>
    native.queueAppend(keys, { capacity: 1_000_000, mode: 'all', events: [event] }),
  )
  await p50('queue.trigger', (i) => queue.trigger({ kind: 'file_changed', path: `src/${i}.ts` }))
} finally {
  await backend.close()
  rmSync(dir, { recursive: true, force: true })
}
