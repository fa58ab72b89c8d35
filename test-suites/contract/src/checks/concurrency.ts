import { type Backend, isAgentStateError, type Lease } from '@agent-state/core'
import { bytes, ensure, ensureEqual, fail, text } from '../assert.js'
import { type ContractCheck, check } from '../check.js'
import type { Harness } from '../harness.js'
import {
  type CasInput,
  type CasOutput,
  casRegisterModel,
  checkLinearizability,
  type HistoryOp,
} from '../linearizability.js'

async function instances(h: Harness, count: number): Promise<Backend[]> {
  return Promise.all(Array.from({ length: count }, () => h.backend()))
}

/**
 * Increments the decimal counter at `key` once by read, compare-and-set,
 * retry on `PRECONDITION_FAILED`. Shared with the multi-process children.
 */
export async function casIncrement(b: Backend, key: string): Promise<number> {
  for (let attempt = 0; attempt < 100_000; attempt++) {
    const current = await b.get(key)
    const next = current === null ? 1 : Number(text(current.value)) + 1
    try {
      if (current === null) await b.put(key, bytes(String(next)), { ifNoneMatch: '*' })
      else await b.put(key, bytes(String(next)), { ifMatch: current.meta.version })
      return attempt
    } catch (error) {
      if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
    }
  }
  fail(`gave up incrementing ${key}`)
}

/** Concurrency and linearizability. */
export const concurrencyChecks: ContractCheck[] = [
  check(
    'concurrency',
    'concurrent conditional deletes of one version have one winner',
    async (h) => {
      const all = await instances(h, Math.max(h.scale.instances, 2))
      h.report({ instances: all.length })
      for (let round = 0; round < 5; round++) {
        const key = `cdel/${round}`
        const meta = await (all[0] as Backend).put(key, bytes('v'))
        // Half the racers delete, half compare-and-set, all with the same ifMatch.
        const results = await Promise.allSettled(
          all.map((b, i) =>
            i % 2 === 0
              ? b.delete(key, { ifMatch: meta.version })
              : b.put(key, bytes(`w${i}`), { ifMatch: meta.version }),
          ),
        )
        let winners = 0
        let deleted = false
        for (const [i, r] of results.entries()) {
          if (r.status === 'fulfilled') {
            winners++
            if (i % 2 === 0) {
              ensureEqual(r.value, true, `round ${round}: the winning delete saw the value`)
              deleted = true
            }
          } else if (!isAgentStateError(r.reason, 'PRECONDITION_FAILED')) {
            fail(`round ${round}: a loser failed with ${String(r.reason)}, not PRECONDITION_FAILED`)
          }
        }
        ensureEqual(winners, 1, `round ${round}: racers with the same ifMatch that won`)
        const after = await (all[1] as Backend).get(key)
        ensureEqual(after === null, deleted, `round ${round}: the key is gone iff a delete won`)
        // Only deletes now: exactly one true against the value that is there, if any.
        if (after !== null) {
          const dels = await Promise.allSettled(
            all.map((b) => b.delete(key, { ifMatch: after.meta.version })),
          )
          ensureEqual(
            dels.filter((r) => r.status === 'fulfilled').length,
            1,
            `round ${round}: concurrent conditional deletes that won`,
          )
          for (const r of dels) {
            if (r.status === 'fulfilled') ensureEqual(r.value, true, 'the winner returns true')
            else if (!isAgentStateError(r.reason, 'PRECONDITION_FAILED')) {
              fail(`round ${round}: a losing delete failed with ${String(r.reason)}`)
            }
          }
        }
        ensureEqual(await (all[0] as Backend).get(key), null, `round ${round}: deleted`)
      }
    },
  ),

  check('concurrency', 'create-if-absent has exactly one winner', async (h) => {
    const all = await instances(h, Math.max(h.scale.instances, 2))
    for (let round = 0; round < 5; round++) {
      const results = await Promise.allSettled(
        all.map((b, i) => b.put(`once/${round}`, bytes(`writer ${i}`), { ifNoneMatch: '*' })),
      )
      const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []))
      ensureEqual(winners.length, 1, `round ${round}: number of create-if-absent winners`)
      for (const r of results) {
        if (r.status === 'rejected' && !isAgentStateError(r.reason, 'PRECONDITION_FAILED')) {
          fail(
            `round ${round}: a loser failed with ${String(r.reason)} instead of PRECONDITION_FAILED`,
          )
        }
      }
      const stored = await all[0]?.get(`once/${round}`)
      ensureEqual(
        stored === null || stored === undefined ? null : text(stored.value),
        `writer ${winners[0]}`,
        'stored value is the winner',
      )
    }
  }),

  check('concurrency', 'N by M compare-and-set increments lose no update', async (h) => {
    const all = await instances(h, Math.max(h.scale.instances, 2))
    const m = Math.max(h.scale.increments, 1)
    await Promise.all(
      all.map(async (b) => {
        for (let i = 0; i < m; i++) await casIncrement(b, 'counter')
      }),
    )
    const final = await all[0]?.get('counter')
    ensureEqual(
      final === null || final === undefined ? 0 : Number(text(final.value)),
      all.length * m,
      'counter after N×M increments',
    )
  }),

  check('concurrency', 'never two lease holders at once under acquire storms', async (h) => {
    const all = await instances(h, Math.max(h.scale.instances, 2))
    for (let round = 0; round < 5; round++) {
      const results = await Promise.allSettled(
        all.map((b, i) =>
          b.acquireLease(`storm/${round}`, { holder: `h${i}`, ttlMs: h.leaseTtlMs }),
        ),
      )
      const winners = results.filter((r) => r.status === 'fulfilled')
      ensureEqual(winners.length, 1, `round ${round}: concurrent acquirers that got the lease`)
      for (const r of results) {
        if (r.status === 'rejected' && !isAgentStateError(r.reason, 'LEASE_HELD')) {
          fail(`a losing acquire failed with ${String(r.reason)} instead of LEASE_HELD`)
        }
      }
    }
    let holders = 0
    let acquisitions = 0
    let lastToken = 0
    // The losers back off (up to 32 ms, randomized) rather than retry every millisecond: on a
    // networked backend on a loaded host a tight loop of N losers queued the holder's own put
    // and release behind their refusals, and the storm starved (11 acquisitions in 10 s on S3).
    // The contention the check needs stays: every release meets waiting acquirers.
    const deadline = Date.now() + 20_000
    await Promise.all(
      all.map(async (b, i) => {
        for (let n = 0, refused = 0; n < 3 && Date.now() < deadline; ) {
          let lease: Lease
          try {
            lease = await b.acquireLease('storm/loop', { holder: `h${i}`, ttlMs: h.leaseTtlMs })
          } catch (error) {
            if (!isAgentStateError(error, 'LEASE_HELD')) throw error
            refused = Math.min(refused + 1, 5)
            await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 2 ** refused))
            continue
          }
          refused = 0
          holders++
          acquisitions++
          n++
          ensureEqual(holders, 1, 'lease holders at once')
          ensure(lease.token > lastToken, `token ${lease.token} after ${lastToken}`)
          lastToken = lease.token
          await b.put('storm/loop', bytes(String(lease.token)), { lease })
          holders--
          ensureEqual(await b.releaseLease(lease), true, 'release by the holder')
        }
      }),
    )
    ensure(acquisitions >= all.length, `the storm made progress (${acquisitions} acquisitions)`)
  }),

  check(
    'linearizability',
    'concurrent compare-and-set and delete histories are linearizable',
    async (h) => {
      const all = await instances(h, Math.min(Math.max(h.scale.instances, 2), 8))
      const history: HistoryOp<CasInput, CasOutput>[] = []
      const keys = ['lin/a', 'lin/b']
      const known = new Map<string, string | null>()
      let seed = h.seed
      const random = (): number => {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff
        return seed / 0x7fffffff
      }
      await Promise.all(
        all.map(async (b, p) => {
          for (let i = 0; i < 30; i++) {
            const key = keys[Math.floor(random() * keys.length)] as string
            const roll = random()
            const last = known.get(key) ?? null
            let input: CasInput
            if (roll < 0.3) input = { type: 'get' }
            else if (roll < 0.37) input = { type: 'delete' }
            else if (roll < 0.47 && last !== null) input = { type: 'delete', ifMatch: last }
            else if (roll < 0.6 || last === null) input = { type: 'put', ifNoneMatch: true }
            else input = { type: 'put', ifMatch: last }
            const invoke = performance.now()
            let output: CasOutput
            if (input.type === 'get') {
              const meta = await b.head(key)
              output = { type: 'get', version: meta?.version ?? null }
              known.set(key, meta?.version ?? null)
            } else if (input.type === 'delete') {
              try {
                const opts = input.ifMatch === undefined ? {} : { ifMatch: input.ifMatch }
                output = { type: 'delete', ok: true, existed: await b.delete(key, opts) }
                known.set(key, null)
              } catch (error) {
                if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
                output = { type: 'delete', ok: false }
              }
            } else {
              try {
                const opts =
                  input.ifMatch !== undefined
                    ? { ifMatch: input.ifMatch }
                    : { ifNoneMatch: '*' as const }
                const meta = await b.put(key, bytes(`${p}:${i}`), opts)
                output = { type: 'put', ok: true, version: meta.version }
                known.set(key, meta.version)
              } catch (error) {
                if (!isAgentStateError(error, 'PRECONDITION_FAILED')) throw error
                output = { type: 'put', ok: false }
              }
            }
            history.push({ key, process: p, input, output, invoke, response: performance.now() })
          }
        }),
      )
      h.report({ instances: all.length, operations: history.length })
      const result = checkLinearizability(history, casRegisterModel)
      ensureEqual(
        result.status,
        'linearizable',
        `history of ${history.length} operations (key ${result.key})`,
      )
    },
  ),
]
