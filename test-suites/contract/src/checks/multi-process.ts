import type { Capabilities, Lease } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, fail, text } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import type { ContractOptions } from '../types.js'

/** Skip reason of the multi-process tier. */
export function multiProcessSkip(caps: Capabilities, options: ContractOptions): string | undefined {
  if (!caps.multiProcess) return 'capability multiProcess is not claimed'
  if (options.process === undefined) return 'no `process` option (child backend module) was given'
  return undefined
}

const TIMEOUT = 120_000

/** Multi-process races, lease contention and the frozen stale holder. */
export const multiProcessChecks: ContractCheck[] = [
  check(
    'multi-process',
    'N by M compare-and-set increments across processes lose no update',
    async (h) => {
      const children = await Promise.all(
        Array.from({ length: Math.max(h.scale.processes, 2) }, () => h.child()),
      )
      const m = Math.max(h.scale.increments, 1)
      await Promise.all(
        children.map((c) => c.request({ type: 'increments', key: 'mp/counter', count: m })),
      )
      const b = await h.backend({ realClock: true })
      const final = await b.get('mp/counter')
      ensureEqual(
        final === null ? 0 : Number(text(final.value)),
        children.length * m,
        'counter after N×M increments',
      )
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),

  check(
    'multi-process',
    'create-if-absent across processes has exactly one winner',
    async (h) => {
      const children = await Promise.all(
        Array.from({ length: Math.max(h.scale.processes, 2) }, () => h.child()),
      )
      const b = await h.backend({ realClock: true })
      for (let round = 0; round < 5; round++) {
        const key = `mp/once/${round}`
        const results = await Promise.all(
          children.map((c, i) =>
            c.request<string>({ type: 'create-once', key, value: `child ${i}` }),
          ),
        )
        const winners = results.flatMap((r, i) => (r === 'won' ? [i] : []))
        ensureEqual(winners.length, 1, `round ${round}: processes that won create-if-absent`)
        ensureBytes(
          (await b.get(key))?.value,
          bytes(`child ${winners[0]}`),
          'the winner value is stored',
        )
      }
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),

  check(
    'multi-process',
    'lease contention gives one holder at a time and a token-ordered fenced log',
    async (h) => {
      const children = await Promise.all(
        Array.from({ length: Math.max(h.scale.processes, 2) }, () => h.child()),
      )
      const rounds = 5
      await Promise.all(
        children.map((c) =>
          c.request({
            type: 'lease-log',
            lockKey: 'mp/log',
            logKey: 'mp/log',
            rounds,
            ttlMs: 10_000,
          }),
        ),
      )
      const b = await h.backend({ realClock: true })
      const stored = await b.get('mp/log')
      ensure(stored !== null, 'the fenced log exists')
      const log = JSON.parse(text(stored.value)) as Array<{
        token: number
        holder: string
        phase: string
      }>
      ensureEqual(
        log.length,
        children.length * rounds * 2,
        'log entries (start and end per tenure)',
      )
      let lastToken = 0
      for (let i = 0; i < log.length; i += 2) {
        const start = log[i]
        const end = log[i + 1]
        if (
          start?.phase !== 'start' ||
          end?.phase !== 'end' ||
          start.token !== end.token ||
          start.holder !== end.holder
        ) {
          fail(`two holders overlapped at log entry ${i}: ${JSON.stringify(log.slice(i, i + 2))}`)
        }
        if (start.token <= lastToken)
          fail(`log not sorted by token at entry ${i}: ${start.token} after ${lastToken}`)
        lastToken = start.token
      }
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),

  check(
    'multi-process',
    'a frozen stale holder cannot write renew or release after takeover',
    async (h) => {
      const [a, b] = await Promise.all([h.child(), h.child()])
      if (a === undefined || b === undefined) fail('children')
      const ttlMs = 1000
      const leaseA = await a.request<Lease>({
        type: 'acquire',
        key: 'mp/stale',
        holder: 'A',
        ttlMs,
        waitMs: 0,
      })
      await a.request({ type: 'fenced-put', key: 'mp/stale', value: 'A', lease: leaseA })
      a.signal('SIGSTOP')
      try {
        await new Promise((resolve) => setTimeout(resolve, ttlMs + 100))
        const leaseB = await b.request<Lease>({
          type: 'acquire',
          key: 'mp/stale',
          holder: 'B',
          ttlMs: 30_000,
          waitMs: 10_000,
        })
        ensure(leaseB.token > leaseA.token, `takeover token ${leaseB.token} > ${leaseA.token}`)
        await b.request({ type: 'fenced-put', key: 'mp/stale', value: 'B', lease: leaseB })
      } finally {
        a.signal('SIGCONT')
      }
      const attempt = await a.request<Record<string, string>>({
        type: 'stale-attempt',
        key: 'mp/stale',
        lease: leaseA,
      })
      ensureEqual(attempt.put, 'LEASE_LOST', 'fenced put by the resumed stale holder')
      ensureEqual(attempt.delete, 'LEASE_LOST', 'fenced delete by the resumed stale holder')
      ensureEqual(attempt.renew, 'LEASE_LOST', 'renew by the resumed stale holder')
      ensure(
        attempt.release === 'ok:false' || attempt.release === 'LEASE_LOST',
        `release by the stale holder: ${attempt.release}`,
      )
      const parent = await h.backend({ realClock: true })
      ensureBytes((await parent.get('mp/stale'))?.value, bytes('B'), "B's data is intact")
      ensureSame((await parent.getLease('mp/stale'))?.holder, 'B', "B's lease is intact")
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),
]
