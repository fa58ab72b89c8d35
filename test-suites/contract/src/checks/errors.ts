import {
  type AgentStateError,
  isAgentStateError,
  type Lease,
  type ValueMeta,
} from '@agent-state/core'
import { bytes, ensure, ensureBytes, ensureEqual, fail, rejectsWith } from '../assert.js'
import { type ContractCheck, check, notClaimed } from '../check.js'
import { valueCapSkip } from '../knobs.js'

/**
 * `size` position-dependent bytes, cheap at any size: a 64 KiB pseudo-random block repeated,
 * each 4 KiB stamped with its offset, so a shifted, truncated or repeated copy never matches.
 */
function limitPattern(size: number): Uint8Array {
  const out = new Uint8Array(size)
  const block = Math.min(size, 64 * 1024)
  let x = 2654435761
  for (let i = 0; i < block; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  for (let at = block; at < size; at += block) out.copyWithin(at, 0, Math.min(block, size - at))
  const view = new DataView(out.buffer)
  for (let at = 0; at + 4 <= size; at += 4096) view.setUint32(at, at)
  return out
}

/** Error codes and durability across reopen. */
export const errorChecks: ContractCheck[] = [
  check(
    'errors',
    'LEASE_HELD LEASE_LOST and PRECONDITION_FAILED name their key in message and context',
    async (h) => {
      const b = await h.backend()
      const key = 'named/k'
      const other = await h.backend()
      const m = await b.put(key, bytes('v'))
      const named = (error: AgentStateError, what: string): Record<string, unknown> => {
        ensure(error.message.includes(key), `${what}: the message names ${key}: ${error.message}`)
        const context = (error.context ?? {}) as Record<string, unknown>
        ensureEqual(context.key, key, `${what}: context.key`)
        return context
      }
      // PRECONDITION_FAILED: context.current is the current meta (the rest of it is checked by
      // the metadata tier), on either instance, for put and delete.
      for (const [what, attempt] of [
        ['put with a stale ifMatch', () => b.put(key, bytes('x'), { ifMatch: `${m.version}x` })],
        [
          'put with ifNoneMatch on a live key',
          () => other.put(key, bytes('x'), { ifNoneMatch: '*' }),
        ],
        ['delete with a stale ifMatch', () => other.delete(key, { ifMatch: `${m.version}x` })],
      ] as const) {
        const context = named(await rejectsWith(attempt(), 'PRECONDITION_FAILED', what), what)
        ensureEqual(
          (context.current as { version?: unknown } | null)?.version,
          m.version,
          `${what}: context.current.version`,
        )
      }
      // LEASE_HELD: every write without the lease, and an acquire, name the key and the holder.
      const first = await b.acquireLease(key, { holder: 'named-holder', ttlMs: 60_000 })
      for (const [what, attempt] of [
        ['unfenced put', () => other.put(key, bytes('x'))],
        ['unfenced delete', () => b.delete(key)],
        ['acquire by another holder', () => other.acquireLease(key, { holder: 'h2', ttlMs: 1000 })],
      ] as const) {
        const context = named(await rejectsWith(attempt(), 'LEASE_HELD', what), what)
        ensureEqual(context.holder, 'named-holder', `${what}: context.holder`)
      }
      // LEASE_LOST: the stale token given and the key's current token (null with no live lease).
      ensure(await b.releaseLease(first), 'release of the first lease')
      const second = await other.acquireLease(key, { holder: 'named-holder-2', ttlMs: 60_000 })
      for (const [what, attempt] of [
        ['put with a superseded lease', () => b.put(key, bytes('x'), { lease: first })],
        ['delete with a superseded lease', () => other.delete(key, { lease: first })],
        ['renew of a superseded lease', () => b.renewLease(first)],
      ] as const) {
        const context = named(await rejectsWith(attempt(), 'LEASE_LOST', what), what)
        ensureEqual(context.token, first.token, `${what}: context.token`)
        ensureEqual(context.currentToken, second.token, `${what}: context.currentToken`)
      }
      ensure(await other.releaseLease(second), 'release of the second lease')
      const released = named(
        await rejectsWith(b.renewLease(second), 'LEASE_LOST', 'renew of a released lease'),
        'renew of a released lease',
      )
      ensureEqual(released.token, second.token, 'renew of a released lease: context.token')
      ensureEqual(released.currentToken, null, 'renew of a released lease: context.currentToken')
    },
  ),

  check('errors', 'INVALID_ARGUMENT for bad options', async (h) => {
    const b = await h.backend()
    const m = await b.put('e', bytes('v'))
    await rejectsWith(
      b.put('e', bytes('x'), { ifMatch: m.version, ifNoneMatch: '*' }),
      'INVALID_ARGUMENT',
      'ifMatch together with ifNoneMatch',
    )
    await rejectsWith(b.put('e', bytes('x'), { ifMatch: '' }), 'INVALID_ARGUMENT', 'empty ifMatch')
    await rejectsWith(
      b.put('e', bytes('x'), { ifNoneMatch: 'x' as '*' }),
      'INVALID_ARGUMENT',
      "ifNoneMatch other than '*'",
    )
    await rejectsWith(
      b.put('e', 'text' as unknown as Uint8Array),
      'INVALID_ARGUMENT',
      'a string value',
    )
    await rejectsWith(
      b.put('e', bytes('x'), { writer: { writerId: '' } }),
      'INVALID_ARGUMENT',
      'an empty writerId',
    )
    for (const ttlMs of [0, -1, 1.5, 24 * 60 * 60 * 1000 + 1, Number.NaN]) {
      await rejectsWith(
        b.acquireLease('e', { holder: 'h', ttlMs }),
        'INVALID_ARGUMENT',
        `acquireLease with ttlMs ${ttlMs}`,
      )
    }
    await rejectsWith(
      b.acquireLease('e', { holder: '', ttlMs: 1000 }),
      'INVALID_ARGUMENT',
      'an empty holder',
    )
    const forged: Lease = { key: 'other', holder: 'h', token: 1, ttlMs: 1000, expiresAt: 0 }
    await rejectsWith(
      b.put('e', bytes('x'), { lease: forged }),
      'INVALID_ARGUMENT',
      'a lease of another key',
    )
    await rejectsWith(b.list({ limit: -5 }), 'INVALID_ARGUMENT', 'a negative list limit')
    ensureBytes((await b.get('e'))?.value, bytes('v'), 'nothing written by rejected calls')
    ensureEqual(await b.getLease('e'), null, 'no lease taken by rejected calls')
  }),

  check(
    'errors',
    'VALUE_TOO_LARGE beyond maxValueBytes',
    async (h) => {
      const b = await h.backend()
      const other = await h.backend()
      // The claimed limit itself, whatever it is: a claim is proved or the check fails. Memory
      // stays near three times the limit (the value, the backend's copy, the read-back copy);
      // the value one byte over is never filled, so its pages are never touched.
      const limit = h.capabilities.maxValueBytes
      h.report({ maxValueBytes: limit })
      const over = new Uint8Array(limit + 1)
      await rejectsWith(b.put('big', over), 'VALUE_TOO_LARGE', 'a value one byte over the limit')
      ensureEqual(await other.get('big'), null, 'nothing stored by a too-large value')
      const atLimit = limitPattern(limit)
      let meta: ValueMeta
      try {
        meta = await b.put('big', atLimit)
      } catch (error) {
        const code = isAgentStateError(error) ? error.code : String(error)
        return fail(`a value of exactly the claimed maxValueBytes ${limit} was refused: ${code}`)
      }
      ensureEqual(meta.size, limit, 'put size of a value exactly at the limit')
      const read = await other.get('big')
      ensure(read !== null, 'a value exactly at the limit is stored')
      ensureEqual(read.meta.size, limit, 'get size of a value exactly at the limit')
      ensure(
        read.value.byteLength === limit && Buffer.compare(read.value, atLimit) === 0,
        `a value exactly at the limit reads back whole (${read.value.byteLength} of ${limit} bytes, ${Buffer.compare(read.value, atLimit) === 0 ? 'equal' : 'different'})`,
      )
      ensureEqual((await other.head('big'))?.size, limit, 'head size at the limit')
      await rejectsWith(
        b.put('big', over, { ifMatch: meta.version }),
        'VALUE_TOO_LARGE',
        'a compare-and-set one byte over the limit',
      )
      ensureEqual((await other.head('big'))?.version, meta.version, 'the value at the limit stays')
      // Free the space again: large values add up on small servers.
      await b.delete('big')
    },
    { timeoutMs: 120_000, skip: (caps) => valueCapSkip(caps.maxValueBytes) },
  ),

  check(
    'durability',
    'values versions leases and tokens survive close and reopen',
    async (h) => {
      const first = await h.backend()
      const meta = await first.put('dur/a', bytes('kept'), { writer: { writerId: 'w' } })
      await first.put(
        'dur/b',
        Uint8Array.from({ length: 256 }, (_, i) => i),
      )
      await first.put('dur/gone', bytes('x'))
      await first.delete('dur/gone')
      const released = await first.acquireLease('dur/lease', { holder: 'one', ttlMs: h.leaseTtlMs })
      await first.releaseLease(released)
      const held = await first.acquireLease('dur/held', { holder: 'one', ttlMs: h.leaseTtlMs })
      await first.close()
      const second = await h.backend()
      const got = await second.get('dur/a')
      ensureBytes(got?.value, bytes('kept'), 'value after reopen')
      ensureEqual(got?.meta.version, meta.version, 'version after reopen')
      ensureEqual(got?.meta.writer?.writerId, 'w', 'writer after reopen')
      ensureEqual((await second.get('dur/b'))?.value.byteLength, 256, 'binary value after reopen')
      ensureEqual(await second.get('dur/gone'), null, 'a delete survives reopen')
      const still = await second.getLease('dur/held')
      ensureEqual(still?.token, held.token, 'a live lease survives reopen')
      await rejectsWith(second.put('dur/held', bytes('x')), 'LEASE_HELD', 'fencing after reopen')
      const again = await second.acquireLease('dur/lease', { holder: 'two', ttlMs: h.leaseTtlMs })
      ensure(again.token > released.token, `token after reopen ${again.token} > ${released.token}`)
      await second.put('dur/a', bytes('next'), { ifMatch: meta.version })
    },
    { skip: (caps) => (caps.durable ? undefined : notClaimed('durable')) },
  ),

  check(
    'durability',
    'a fenced delete survives reopen with its lease and fencing counter',
    async (h) => {
      const first = await h.backend()
      await first.put('dd/held', bytes('v'))
      const held = await first.acquireLease('dd/held', { holder: 'one', ttlMs: h.leaseTtlMs })
      ensureEqual(await first.delete('dd/held', { lease: held }), true, 'fenced delete')
      await first.put('dd/cycled', bytes('v'))
      const cycled = await first.acquireLease('dd/cycled', { holder: 'one', ttlMs: h.leaseTtlMs })
      await first.delete('dd/cycled', { lease: cycled })
      await first.releaseLease(cycled)
      await first.close()
      const second = await h.backend()
      ensureEqual(await second.get('dd/held'), null, 'the fenced delete survives reopen')
      ensureEqual((await second.getLease('dd/held'))?.token, held.token, 'the lease survives too')
      await rejectsWith(second.put('dd/held', bytes('x')), 'LEASE_HELD', 'it still fences')
      await second.put('dd/held', bytes('back'), { lease: held, ifNoneMatch: '*' })
      ensureEqual(await second.releaseLease(held), true, 'release after reopen')
      const after = await second.acquireLease('dd/cycled', { holder: 'one', ttlMs: h.leaseTtlMs })
      ensure(
        after.token > cycled.token,
        `token after delete and reopen ${after.token} > ${cycled.token}`,
      )
      await rejectsWith(
        second.put('dd/cycled', bytes('x'), { lease: cycled }),
        'LEASE_LOST',
        'the pre-reopen lease of the same holder is stale',
      )
      await second.close()
      const third = await h.backend()
      const last = await h.acquireAfterExpiry(third, 'dd/held', 'one', h.leaseTtlMs)
      ensure(last.token > held.token, `token after a second reopen ${last.token} > ${held.token}`)
    },
    { skip: (caps) => (caps.durable ? undefined : notClaimed('durable')) },
  ),
]
