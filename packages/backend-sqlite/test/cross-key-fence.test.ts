import {
  type Backend,
  createManualClock,
  isAgentStateError,
  type Lease,
  type ManualClock,
} from '@agent-state/core'
import Database from 'better-sqlite3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ENTRIES_TABLE } from '../src/schema.js'
import { rejection, useTempDatabase } from './helpers.js'
import { walCommits } from './wal-commits.js'

/**
 * `PutOptions.fence` on the SQLite backend: the fence key's lease row is read
 * in the write's own transaction (its savepoint in a batch), on real database
 * files. Besides the rules the contract suite's `cross-key-fence` checks state
 * (run them with `AGENT_STATE_CONTRACT_CHECKS='fence'`), this pins what only
 * the package can see: the order of the checks, the group commit (a
 * supersession earlier in the same batch is seen, one failed fenced put leaves
 * the rest of its batch alone), a second connection on the file, the fence
 * row's integrity check, the write lock held while the fence is checked, and
 * that an unfenced put runs no more statements than before.
 */

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (value: Uint8Array | undefined) => new TextDecoder().decode(value)
const TTL = 10_000

/** The code of each settled promise, or 'ok'. */
function outcomes(settled: PromiseSettledResult<unknown>[]): string[] {
  return settled.map((s) =>
    s.status === 'fulfilled' ? 'ok' : String((s.reason as { code?: unknown }).code),
  )
}

/** The text stored at `key`, or `null`. */
async function stored(backend: Backend, key: string): Promise<string | null> {
  const entry = await backend.get(key)
  return entry === null ? null : text(entry.value)
}

// Statements run (their SQL), recorded on the prototype every prepared
// statement of the process shares (as get-many.test.ts counts them), restored
// after this file. better-sqlite3's transactions run BEGIN and COMMIT as such
// statements too.
const statements: string[] = []
const countedMethods = ['get', 'all', 'run', 'iterate'] as const
const originals = new Map<string, unknown>()
let statementProto: Record<string, unknown> | undefined
beforeAll(() => {
  const probe = new Database(':memory:')
  statementProto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>
  probe.close()
  for (const method of countedMethods) {
    const original = statementProto[method] as (...args: unknown[]) => unknown
    originals.set(method, original)
    statementProto[method] = function recorded(this: { source: string }, ...args: unknown[]) {
      statements.push(this.source.replace(/\s+/g, ' ').trim())
      return original.apply(this, args)
    }
  }
})
afterAll(() => {
  for (const [method, original] of originals) if (statementProto) statementProto[method] = original
})

describe('sqlite cross-key fence', () => {
  const db = useTempDatabase()
  let clock: ManualClock
  const open = (): Backend => db.open({ clock: clock.now })

  /** A backend on the file, the fence key `owner` leased by `holder`, and that lease. */
  async function leased(holder = 'worker'): Promise<{ backend: Backend; lease: Lease }> {
    clock = createManualClock(1_000_000)
    const backend = open()
    const lease = await backend.acquireLease('owner', { holder, ttlMs: TTL })
    return { backend, lease }
  }

  it('claims crossKeyFence', () => {
    clock = createManualClock()
    expect(open().capabilities.crossKeyFence).toBe(true)
  })

  it('stores a put fenced by the live lease, leaving that lease as it was', async () => {
    const { backend, lease } = await leased()
    const meta = await backend.put('record', bytes('one'), { fence: lease })
    expect(meta).toMatchObject({ key: 'record', size: 3 })
    const again = await backend.put('record', bytes('two'), { fence: lease, ifMatch: meta.version })
    expect(await stored(backend, 'record')).toBe('two')
    expect((await backend.head('record'))?.version).toBe(again.version)
    expect(await backend.getLease('owner')).toEqual(lease)
    // The fence key itself holds no value: the lease alone fences.
    expect(await backend.get('owner')).toBeNull()
  })

  it('is LEASE_LOST after the fence lease is released, nothing stored', async () => {
    const { backend, lease } = await leased()
    await backend.put('record', bytes('before'))
    expect(await backend.releaseLease(lease)).toBe(true)
    const error = await rejection(backend.put('record', bytes('after'), { fence: lease }))
    expect(isAgentStateError(error, 'LEASE_LOST')).toBe(true)
    expect(error.context).toEqual({
      key: 'record',
      fenceKey: 'owner',
      token: lease.token,
      currentToken: null,
    })
    await expect(backend.put('fresh', bytes('x'), { fence: lease })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    expect(await stored(backend, 'record')).toBe('before')
    expect(await backend.get('fresh')).toBeNull()
  })

  it('is live up to expiresAt - 1 ms and LEASE_LOST from expiresAt on the lease clock', async () => {
    const { backend, lease } = await leased()
    clock.set(lease.expiresAt - 1)
    await backend.put('record', bytes('last moment'), { fence: lease })
    clock.set(lease.expiresAt)
    const error = await rejection(backend.put('record', bytes('too late'), { fence: lease }))
    expect(isAgentStateError(error, 'LEASE_LOST')).toBe(true)
    // Expired, not replaced: the stored lease still has the token.
    expect(error.context.currentToken).toBe(lease.token)
    expect(await stored(backend, 'record')).toBe('last moment')
  })

  it('decides by token: a re-acquire by the same holder name makes the old lease LEASE_LOST', async () => {
    const { backend, lease } = await leased('same-name')
    await backend.releaseLease(lease)
    const next = await backend.acquireLease('owner', { holder: 'same-name', ttlMs: TTL })
    expect(next.holder).toBe(lease.holder)
    expect(next.token).toBeGreaterThan(lease.token)
    const error = await rejection(backend.put('record', bytes('stale'), { fence: lease }))
    expect(isAgentStateError(error, 'LEASE_LOST')).toBe(true)
    expect(error.context.currentToken).toBe(next.token)
    expect(await backend.get('record')).toBeNull()
    // The same holder's new lease fences.
    await backend.put('record', bytes('current'), { fence: next })
    expect(await stored(backend, 'record')).toBe('current')
  })

  it('is LEASE_LOST for a token the fence key never issued, also with the holder and expiry right', async () => {
    const { backend, lease } = await leased()
    await expect(
      backend.put('record', bytes('x'), { fence: { ...lease, token: lease.token + 1 } }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' })
    expect(await backend.get('record')).toBeNull()
  })

  it('checks the fence before the precondition: stale fence and failing ifMatch is LEASE_LOST', async () => {
    const { backend, lease } = await leased()
    const first = await backend.put('record', bytes('v1'))
    await backend.put('record', bytes('v2'))
    await backend.releaseLease(lease)
    await expect(
      backend.put('record', bytes('x'), { fence: lease, ifMatch: first.version }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' })
    await expect(
      backend.put('record', bytes('x'), { fence: lease, ifNoneMatch: '*' }),
    ).rejects.toMatchObject({ code: 'LEASE_LOST' })
    expect(await stored(backend, 'record')).toBe('v2')
  })

  it('with a live fence, a failing precondition is PRECONDITION_FAILED with the current meta', async () => {
    const { backend, lease } = await leased()
    const first = await backend.put('record', bytes('v1'))
    const second = await backend.put('record', bytes('v2!'))
    const error = await rejection(
      backend.put('record', bytes('x'), { fence: lease, ifMatch: first.version }),
    )
    expect(isAgentStateError(error, 'PRECONDITION_FAILED')).toBe(true)
    expect(error.context.current).toMatchObject({ version: second.version, size: 3 })
    await expect(
      backend.put('record', bytes('x'), { fence: lease, ifNoneMatch: '*' }),
    ).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' })
    expect(await stored(backend, 'record')).toBe('v2!')
  })

  it('keeps the written key’s own lease rule: LEASE_HELD while it has a live lease (fence is not lease)', async () => {
    const { backend, lease } = await leased()
    await backend.put('record', bytes('before'))
    const own = await backend.acquireLease('record', { holder: 'worker', ttlMs: TTL })
    await expect(backend.put('record', bytes('x'), { fence: lease })).rejects.toMatchObject({
      code: 'LEASE_HELD',
    })
    // A stale fence is reported first, before the written key's lease.
    await backend.releaseLease(lease)
    await expect(backend.put('record', bytes('x'), { fence: lease })).rejects.toMatchObject({
      code: 'LEASE_LOST',
    })
    expect(await stored(backend, 'record')).toBe('before')
    expect(await backend.getLease('record')).toEqual(own)
  })

  it('sees a supersession earlier in its batch, and fails alone in it', async () => {
    const { backend, lease } = await leased()
    await backend.put('warm', bytes('x'))
    clock.set(lease.expiresAt)
    const before = walCommits(db.path)
    // One tick, so one transaction: each fenced put is checked against the batch's earlier writes.
    const settled = await Promise.allSettled([
      backend.put('a', bytes('a')),
      backend.acquireLease('owner', { holder: 'worker', ttlMs: TTL }),
      backend.put('fenced-by-old', bytes('old')),
      backend.put('fenced-by-old', bytes('stale'), { fence: lease }),
      backend.put('b', bytes('b')),
    ])
    expect(outcomes(settled)).toEqual(['ok', 'ok', 'ok', 'LEASE_LOST', 'ok'])
    expect(walCommits(db.path) - before).toBe(1)
    const next = (settled[1] as PromiseFulfilledResult<Lease>).value
    expect(await stored(backend, 'a')).toBe('a')
    expect(await stored(backend, 'b')).toBe('b')
    expect(await stored(backend, 'fenced-by-old')).toBe('old')
    expect(await backend.getLease('owner')).toEqual(next)

    // And the other way round: the fenced write first, the supersession after it in the batch.
    clock.set(next.expiresAt - 1)
    const renewedFirst = await Promise.allSettled([
      backend.put('in-time', bytes('fenced'), { fence: next }),
      backend.releaseLease(next),
      backend.put('too-late', bytes('fenced'), { fence: next }),
    ])
    expect(outcomes(renewedFirst)).toEqual(['ok', 'ok', 'LEASE_LOST'])
    expect(await stored(backend, 'in-time')).toBe('fenced')
    expect(await backend.get('too-late')).toBeNull()
  })

  it('sees another connection’s acquire: its lease supersedes this one’s fence', async () => {
    const { backend: first, lease } = await leased('worker')
    const second = open()
    // While the lease lives, the other connection cannot take it, and the fenced put stores.
    await expect(
      second.acquireLease('owner', { holder: 'worker', ttlMs: TTL }),
    ).rejects.toMatchObject({ code: 'LEASE_HELD' })
    await first.put('record', bytes('by the first'), { fence: lease })
    clock.set(lease.expiresAt)
    // Same holder name on the other connection: only the token tells them apart.
    const taken = await second.acquireLease('owner', { holder: 'worker', ttlMs: TTL })
    const error = await rejection(first.put('record', bytes('stale'), { fence: lease }))
    expect(isAgentStateError(error, 'LEASE_LOST')).toBe(true)
    expect(error.context.currentToken).toBe(taken.token)
    expect(await stored(first, 'record')).toBe('by the first')
    expect(await stored(second, 'record')).toBe('by the first')
    // The new holder's lease fences on either connection.
    await second.put('record', bytes('by the second'), { fence: taken })
    await first.put('other', bytes('fenced by the taken lease'), { fence: taken })
    expect(await stored(first, 'record')).toBe('by the second')
    expect(await stored(second, 'other')).toBe('fenced by the taken lease')
  })

  it('decides the fence’s expiry on a clock read under the write lock (no connection writes meanwhile)', async () => {
    const fixed = createManualClock(1_000_000)
    clock = fixed
    let raw: Database.Database | undefined
    const lockAttempts: string[] = []
    let probing = false
    // The backend reads its clock inside the write transaction, right before the fence row (the
    // statement order below shows that row read between BEGIN IMMEDIATE and COMMIT).
    const backend = db.open({
      clock: () => {
        if (probing) {
          try {
            raw?.prepare(`UPDATE ${ENTRIES_TABLE} SET lease_token = lease_token + 1`).run()
            lockAttempts.push('written')
          } catch (error) {
            lockAttempts.push(String((error as { code?: unknown }).code))
          }
        }
        return fixed.now()
      },
    })
    // Opened after the backend created the file (an empty file is not an agent-state database).
    raw = new Database(db.path, { timeout: 0 })
    try {
      const lease = await backend.acquireLease('owner', { holder: 'worker', ttlMs: TTL })
      probing = true
      await backend.put('record', bytes('x'), { fence: lease })
      probing = false
      expect(lockAttempts).toEqual(['SQLITE_BUSY'])
      expect(await backend.getLease('owner')).toEqual(lease)
    } finally {
      raw.close()
    }
  })

  it('is CORRUPT, nothing stored, when the fence key’s row fails its integrity check', async () => {
    const { backend, lease } = await leased()
    const raw = new Database(db.path)
    raw
      .prepare(`UPDATE ${ENTRIES_TABLE} SET lease_ttl_ms = lease_ttl_ms + 1 WHERE key = 'owner'`)
      .run()
    raw.close()
    await expect(backend.put('record', bytes('x'), { fence: lease })).rejects.toMatchObject({
      code: 'CORRUPT',
    })
    expect(await backend.get('record')).toBeNull()
  })

  it('reads the fence row only for a fenced put: an unfenced put runs the statements it did', async () => {
    const { backend, lease } = await leased()
    await backend.put('record', bytes('v0'))
    /** The SQL `call` runs, shortened to its first words. */
    async function sqlOf(call: () => Promise<unknown>): Promise<string[]> {
      const from = statements.length
      await call()
      return statements.slice(from).map((sql) => sql.split(' ').slice(0, 3).join(' '))
    }
    const plain = await sqlOf(() => backend.put('record', bytes('v1')))
    // One transaction: the written key's row, then its value columns. Nothing more.
    expect(plain).toEqual([
      'BEGIN IMMEDIATE',
      'SELECT rowid, version,',
      'UPDATE agent_state_entries SET',
      'COMMIT',
    ])
    const fenced = await sqlOf(() => backend.put('record', bytes('v2'), { fence: lease }))
    // The same, with the fence key's row read first, inside the same transaction.
    expect(fenced).toEqual([
      'BEGIN IMMEDIATE',
      'SELECT rowid, version,',
      'SELECT rowid, version,',
      'UPDATE agent_state_entries SET',
      'COMMIT',
    ])
  })
})
