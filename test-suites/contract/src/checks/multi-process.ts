import type { Capabilities, Lease } from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, ensureSame, fail, text } from '../assert.js'
import { type ContractCheck, check, notClaimed } from '../check.js'
import type { ContractChild } from '../child-process.js'
import type { Harness } from '../harness.js'
import { listAll } from './list-all.js'

/**
 * Skip reason of the multi-process tier: only a capability that is not
 * claimed. A backend that claims `multiProcess` without a `process` option
 * runs the tier and fails it (see `Harness.child`): a claim must be proved.
 */
export function multiProcessSkip(caps: Capabilities): string | undefined {
  return caps.multiProcess ? undefined : notClaimed('multiProcess')
}

/** Spawns the tier's children (at least two) and reports how many ran. */
export async function spawnChildren(h: Harness, count = Math.max(h.scale.processes, 2)) {
  const children = await Promise.all(Array.from({ length: count }, () => h.child()))
  h.report({ processes: children.length })
  return children
}

const TIMEOUT = 120_000

/** Multi-process races, lease contention and the frozen stale holder. */
export const multiProcessChecks: ContractCheck[] = [
  check(
    'multi-process',
    'keys present for the whole walk are listed once while other processes write',
    async (h) => {
      const children = await spawnChildren(h)
      const b = await h.backend({ realClock: true })
      const stable = Array.from({ length: 60 }, (_, i) => `mpl/${String(i * 2).padStart(3, '0')}`)
      const mine = stable.slice(0, 30)
      for (const key of mine) await b.put(key, bytes('stable'))
      // Warm this process's view of the names, then let another process add the other half:
      // a name cache that only this process's own writes invalidate is what this catches.
      await listAll(b, { prefix: 'mpl/', limit: 4 })
      await (children[0] as ContractChild).request({
        type: 'put-many',
        keys: stable.slice(30),
        value: 'stable',
      })
      let done = false
      const churn = Promise.all(
        children.map((c, seed) =>
          c.request<number>({ type: 'churn', prefix: 'mpl/', seed, durationMs: 3000 }),
        ),
      ).finally(() => {
        done = true
      })
      // Awaited below; a walk that fails first must not leave its rejection unhandled.
      churn.catch(() => undefined)
      let walks = 0
      while (!done || walks < 2) {
        const seen = await listAll(b, { prefix: 'mpl/', limit: 4 })
        for (const key of stable) {
          const count = seen.filter((k) => k === key).length
          if (count !== 1) fail(`walk ${walks}: stable key ${key} listed ${count} times`)
        }
        if (new Set(seen).size !== seen.length) fail(`walk ${walks}: a key was listed twice`)
        walks++
        // A backend whose list settles without I/O callbacks would otherwise keep this loop in
        // microtasks forever, and the children's replies (IPC, a macrotask) would never arrive.
        await new Promise((resolve) => setImmediate(resolve))
      }
      const writes = (await churn).reduce((sum, n) => sum + n, 0)
      h.report({ walks, churnWrites: writes })
      ensure(writes > children.length, `the other processes wrote (${writes} writes)`)
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),

  check(
    'multi-process',
    'N by M compare-and-set increments across processes lose no update',
    async (h) => {
      const children = await spawnChildren(h)
      const m = Math.max(h.scale.increments, 1)
      h.report({ incrementsPerProcess: m })
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
    'create-if-absent and compare-and-set across processes have exactly one winner',
    async (h) => {
      const children = await spawnChildren(h)
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
        const created = await b.get(key)
        ensureBytes(created?.value, bytes(`child ${winners[0]}`), 'the winner value is stored')
        // Every process compare-and-sets the same version: exactly one may win again.
        const casResults = await Promise.all(
          children.map((c, i) =>
            c.request<string>({
              type: 'create-once',
              key,
              value: `cas ${i}`,
              ifMatch: created?.meta.version as string,
            }),
          ),
        )
        const casWinners = casResults.flatMap((r, i) => (r === 'won' ? [i] : []))
        ensureEqual(casWinners.length, 1, `round ${round}: processes that won compare-and-set`)
        ensureBytes((await b.get(key))?.value, bytes(`cas ${casWinners[0]}`), 'the CAS winner')
      }
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),

  check(
    'multi-process',
    'lease contention gives one holder at a time and a token-ordered fenced log',
    async (h) => {
      const children = await spawnChildren(h)
      const rounds = 5
      h.report({ tenuresPerProcess: rounds })
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
      const [a, b] = await spawnChildren(h, 2)
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
      let leaseB: Lease
      try {
        await new Promise((resolve) => setTimeout(resolve, ttlMs + 100))
        leaseB = await b.request<Lease>({
          type: 'acquire',
          key: 'mp/stale',
          // The same holder name: the stale lease must be refused by its token alone.
          holder: 'A',
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
      // The contract's one answer for a stale release: it resolves false, it never throws.
      ensureEqual(attempt.release, 'ok:false', 'release by the resumed stale holder')
      const parent = await h.backend({ realClock: true })
      ensureBytes((await parent.get('mp/stale'))?.value, bytes('B'), "B's data is intact")
      ensureSame((await parent.getLease('mp/stale'))?.token, leaseB.token, "B's lease is intact")
    },
    { skip: multiProcessSkip, timeoutMs: TIMEOUT },
  ),
]
