import {
  type Backend,
  type ChangeHint,
  isAgentStateError,
  type StoredValue,
} from '@agent-state/core'
import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_SCHEMA } from '../src/index.js'
import { openWithHooks } from '../src/postgres-backend.js'
import { FENCED_PUT_FUNCTION } from '../src/schema-fenced-put.js'
import { NOW_MS } from '../src/statements.js'

/**
 * `PutOptions.fence` on PostgreSQL (schema-fenced-put.ts): the contract's
 * answers, and the `FOR SHARE` lock on the fence key's row that orders every
 * fenced write before a takeover, renewal or release of the fence key. The
 * lock is shown with a second session holding rows locked (a raw `pg`
 * client) and `pg_blocking_pids`, which names the session a waiting one
 * waits for; each lock test has a mutant, the installed function with the
 * lock (or the expiry check at the write) taken out, in a schema of its own.
 */

const server = await startPostgresServer()
afterAll(() => server.stop())

const bytes = (text: string) => new TextEncoder().encode(text)
const text = (stored: StoredValue | null) =>
  stored === null ? null : new TextDecoder().decode(stored.value)

let opened = 0
/**
 * A backend on a namespace of its own. `lockTimeoutMs` long by default: the
 * lock tests hold rows for a while, and a wait must end by the lock being
 * let go, not by `lock_timeout`.
 */
async function open(schema = DEFAULT_SCHEMA, lockTimeoutMs = 30_000) {
  opened++
  const namespace = `fence-${opened}-${Math.random().toString(36).slice(2)}`
  const backend = await openWithHooks(
    { connectionString: server.url, namespace, schema, poolSize: 2, lockTimeoutMs },
    {},
  )
  return { backend, namespace, schema }
}

async function connect(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: server.url })
  await client.connect()
  return client
}

/** The call's outcome: `resolved`, or its error code and the fence's current token. */
async function outcomeOf(call: Promise<unknown>) {
  try {
    await call
    return { code: 'resolved' }
  } catch (error) {
    if (!isAgentStateError(error)) throw error
    return { code: error.code, currentToken: error.context.currentToken }
  }
}

describe('crossKeyFence: the answers', () => {
  it('is claimed', async () => {
    const { backend } = await open()
    try {
      expect(backend.capabilities.crossKeyFence).toBe(true)
    } finally {
      await backend.close()
    }
  })

  it("a put fenced by the fence key's live lease is written (create, overwrite, compare-and-set, create-only)", async () => {
    const { backend } = await open()
    try {
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      const created = await backend.put('data', bytes('1'), { fence: lease })
      expect(created.version.startsWith('1.')).toBe(true)
      const overwritten = await backend.put('data', bytes('2'), { fence: lease })
      const swapped = await backend.put('data', bytes('3'), {
        fence: lease,
        ifMatch: overwritten.version,
      })
      const stored = await backend.get('data')
      expect(text(stored)).toBe('3')
      expect(stored?.meta.version).toBe(swapped.version)
      await backend.put('fresh', bytes('x'), { fence: lease, ifNoneMatch: '*' })
      expect(text(await backend.get('fresh'))).toBe('x')
      // The fence key's lease is untouched by the writes it fenced.
      expect(await backend.getLease('owner')).toEqual(lease)
    } finally {
      await backend.close()
    }
  })

  /** A refused fenced put: its code and context, the key unchanged (nothing stored). */
  async function refused(backend: Backend, key: string, call: () => Promise<unknown>) {
    const before = await backend.get(key)
    const outcome = await outcomeOf(call())
    expect(await backend.get(key)).toEqual(before)
    return outcome
  }

  it('LEASE_LOST once the fence is released, nothing stored', async () => {
    const { backend } = await open()
    try {
      await backend.put('data', bytes('before'))
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      expect(await backend.releaseLease(lease)).toBe(true)
      expect(
        await refused(backend, 'data', () => backend.put('data', bytes('x'), { fence: lease })),
      ).toEqual({ code: 'LEASE_LOST', currentToken: null })
      await expect(backend.put('data', bytes('x'), { fence: lease })).rejects.toMatchObject({
        code: 'LEASE_LOST',
        context: { key: 'data', fenceKey: 'owner', token: lease.token, currentToken: null },
      })
    } finally {
      await backend.close()
    }
  })

  it('LEASE_LOST once the fence expired (database clock), nothing stored, also for a key without a row', async () => {
    const { backend } = await open()
    try {
      await backend.put('data', bytes('before'))
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 300 })
      while ((await backend.getLease('owner')) !== null) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      // Expired, not superseded: the stored token is still the fence's own.
      expect(
        await refused(backend, 'data', () => backend.put('data', bytes('x'), { fence: lease })),
      ).toEqual({ code: 'LEASE_LOST', currentToken: lease.token })
      expect(
        await refused(backend, 'new', () => backend.put('new', bytes('x'), { fence: lease })),
      ).toEqual({ code: 'LEASE_LOST', currentToken: lease.token })
      expect(await backend.get('new')).toBeNull()
    } finally {
      await backend.close()
    }
  })

  it('LEASE_LOST after a re-acquire by the same holder name: the token decides', async () => {
    const { backend } = await open()
    try {
      await backend.put('data', bytes('before'))
      const first = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      await backend.releaseLease(first)
      const second = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      expect(second.token).toBeGreaterThan(first.token)
      expect(
        await refused(backend, 'data', () => backend.put('data', bytes('x'), { fence: first })),
      ).toEqual({ code: 'LEASE_LOST', currentToken: second.token })
      // The same holder's expired lease taken again (no release) is a new token too.
      const short = await backend.acquireLease('other', { holder: 'a', ttlMs: 200 })
      while ((await backend.getLease('other')) !== null) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
      const again = await backend.acquireLease('other', { holder: 'a', ttlMs: 60_000 })
      expect(
        await refused(backend, 'data', () => backend.put('data', bytes('x'), { fence: short })),
      ).toEqual({ code: 'LEASE_LOST', currentToken: again.token })
      // The current one fences.
      await backend.put('data', bytes('after'), { fence: second })
      expect(text(await backend.get('data'))).toBe('after')
    } finally {
      await backend.close()
    }
  })

  it('LEASE_LOST for a fence key that has no row at all', async () => {
    const { backend } = await open()
    try {
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      expect(
        await refused(backend, 'data', () =>
          backend.put('data', bytes('x'), { fence: { ...lease, key: 'never-leased' } }),
        ),
      ).toEqual({ code: 'LEASE_LOST', currentToken: null })
      expect(await backend.get('data')).toBeNull()
    } finally {
      await backend.close()
    }
  })

  it('the order of checks: a stale fence before the precondition and the own lease; a live one lets them answer', async () => {
    const { backend } = await open()
    try {
      const first = await backend.put('data', bytes('1'))
      await backend.put('data', bytes('2'))
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      const stale = { ...lease, token: lease.token + 1 }
      // Stale fence and failing ifMatch / ifNoneMatch: LEASE_LOST.
      expect(
        await refused(backend, 'data', () =>
          backend.put('data', bytes('x'), { fence: stale, ifMatch: first.version }),
        ),
      ).toEqual({ code: 'LEASE_LOST', currentToken: lease.token })
      expect(
        await refused(backend, 'data', () =>
          backend.put('data', bytes('x'), { fence: stale, ifNoneMatch: '*' }),
        ),
      ).toEqual({ code: 'LEASE_LOST', currentToken: lease.token })
      // Live fence and failing ifMatch: PRECONDITION_FAILED with the current meta.
      const current = await backend.head('data')
      await expect(
        backend.put('data', bytes('x'), { fence: lease, ifMatch: first.version }),
      ).rejects.toMatchObject({ code: 'PRECONDITION_FAILED', context: { current } })
      await expect(
        backend.put('data', bytes('x'), { fence: lease, ifNoneMatch: '*' }),
      ).rejects.toMatchObject({ code: 'PRECONDITION_FAILED' })
      expect(text(await backend.get('data'))).toBe('2')
      // The written key has a live lease of its own: `fence` is not `lease`.
      await backend.acquireLease('data', { holder: 'b', ttlMs: 60_000 })
      expect(
        await refused(backend, 'data', () => backend.put('data', bytes('x'), { fence: lease })),
      ).toEqual({ code: 'LEASE_HELD', currentToken: undefined })
      // ... and with a stale fence, the fence answers first.
      expect(
        await refused(backend, 'data', () => backend.put('data', bytes('x'), { fence: stale })),
      ).toEqual({ code: 'LEASE_LOST', currentToken: lease.token })
    } finally {
      await backend.close()
    }
  })

  it("core's argument checks still answer first: INVALID_ARGUMENT", async () => {
    const { backend } = await open()
    try {
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      await expect(backend.put('owner', bytes('x'), { fence: lease })).rejects.toMatchObject({
        code: 'INVALID_ARGUMENT',
      })
      await expect(
        backend.put('data', bytes('x'), { fence: lease, lease: { ...lease, key: 'data' } }),
      ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      expect(await backend.get('data')).toBeNull()
      expect(await backend.get('owner')).toBeNull()
    } finally {
      await backend.close()
    }
  })

  it('a fenced put is announced to watchers as a plain put is', async () => {
    const { backend } = await open()
    const stop = new AbortController()
    try {
      const watch = backend.watch?.bind(backend)
      if (watch === undefined) throw new Error('the backend has no watch')
      const hints = watch('data', { signal: stop.signal })[Symbol.asyncIterator]()
      expect((await hints.next()).value).toEqual({ kind: 'resync' })
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      await backend.put('data', bytes('1'), { fence: lease })
      expect((await hints.next()).value as ChangeHint).toEqual({ kind: 'key', key: 'data' })
    } finally {
      stop.abort()
      await backend.close()
    }
  })
})

/**
 * Polls until a session whose statement matches `like` waits for a lock held
 * by `holderPid` (`pg_blocking_pids`): its pid, or `undefined` once `call`
 * settled first (it never waited there) or after 15 s.
 */
async function waitingOn(
  observer: pg.Client,
  holderPid: number,
  like: string,
  call: Promise<unknown>,
): Promise<number | undefined> {
  let settled = false
  call.then(
    () => {
      settled = true
    },
    () => {
      settled = true
    },
  )
  const deadline = Date.now() + 15_000
  while (!settled && Date.now() < deadline) {
    const { rows } = await observer.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2',
      [holderPid, like],
    )
    if (rows[0] !== undefined && !settled) return rows[0].pid
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return undefined
}

const FENCED_CALL = `%${FENCED_PUT_FUNCTION}(%`
const LEASE_UPDATE = 'UPDATE %SET lease_holder%'

async function pidOf(client: pg.Client): Promise<number> {
  return (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0
}

/** Locks the row of `key` FOR UPDATE in `client`'s open transaction. */
async function lockRow(client: pg.Client, schema: string, namespace: string, key: string) {
  const { rowCount } = await client.query(
    `SELECT 1 FROM ${schema}.agent_state_entries WHERE namespace = $1 AND key = $2 FOR UPDATE`,
    [namespace, key],
  )
  expect(rowCount).toBe(1)
}

/**
 * Installs the mutant `edit` of the fenced put function in a schema of its
 * own (migrated first by opening a backend on it): the function as
 * PostgreSQL has it (`pg_get_functiondef`), edited, replaced.
 */
async function installMutant(schema: string, edit: (definition: string) => string) {
  await (await open(schema)).backend.close()
  const client = await connect()
  try {
    const { rows } = await client.query<{ definition: string }>(
      `SELECT pg_get_functiondef('${schema}.${FENCED_PUT_FUNCTION}'::regproc) AS definition`,
    )
    const definition = rows[0]?.definition ?? ''
    const mutant = edit(definition)
    expect(mutant).not.toBe(definition)
    await client.query(mutant)
  } finally {
    await client.end()
  }
}

/** The function reading the fence row without a lock: the read a READ COMMITTED put must not rely on. */
const WITHOUT_FOR_SHARE = 'fence_no_share'
/** The function without the fence's expiry check in the write statement (checked at the read only). */
const WITHOUT_WRITE_EXPIRY = 'fence_no_write_expiry'
let installed: Promise<unknown> | undefined
/** Installs both mutants once, at the first test that needs them. */
function mutants(): Promise<unknown> {
  installed ??= Promise.all([
    installMutant(WITHOUT_FOR_SHARE, (definition) => definition.replace(' FOR SHARE;', ';')),
    installMutant(WITHOUT_WRITE_EXPIRY, (definition) =>
      definition.replaceAll(` AND v_fence_expires_at > ${NOW_MS}`, ''),
    ),
  ])
  return installed
}

/**
 * A second session locks the fence key's row (`FOR UPDATE`; with
 * `lockWritten`, the written key's row too) and a fenced put starts: where
 * the put waits (`fence-row holder`: `pg_blocking_pids` names that session
 * while it holds the rows; `settled`: it answered while the rows were
 * locked). Then the session ends: `takeover` writes what an `acquireLease`
 * by holder `b` writes (the next token) and commits, `rollback` lets go
 * unchanged. Returns that, the put's outcome, the stored value and the
 * fence key's lease after.
 */
async function putWhileFenceRowLocked(
  schema: string,
  end: 'takeover' | 'rollback',
  lockWritten: boolean,
) {
  const { backend, namespace } = await open(schema)
  const locker = await connect()
  const observer = await connect()
  try {
    const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
    await backend.put('data', bytes('before'))
    const lockerPid = await pidOf(locker)
    await locker.query('BEGIN')
    await lockRow(locker, schema, namespace, 'owner')
    if (lockWritten) await lockRow(locker, schema, namespace, 'data')
    const put = outcomeOf(backend.put('data', bytes('fenced'), { fence: lease }))
    const waited = await waitingOn(observer, lockerPid, FENCED_CALL, put)
    if (end === 'takeover') {
      await locker.query(
        `UPDATE ${schema}.agent_state_entries SET lease_holder = 'b', lease_token = fence + 1,
           fence = fence + 1, lease_ttl_ms = 60000, lease_expires_at = ${NOW_MS} + 60000,
           row_version = nextval('${schema}.agent_state_row_versions')
         WHERE namespace = $1 AND key = 'owner'`,
        [namespace],
      )
    }
    await locker.query(end === 'takeover' ? 'COMMIT' : 'ROLLBACK')
    return {
      put: { waited: waited === undefined ? 'settled' : 'fence-row holder', ...(await put) },
      stored: text(await backend.get('data')),
      owner: (await backend.getLease('owner'))?.token === lease.token ? 'a' : 'b',
      token: lease.token,
    }
  } finally {
    await locker.end()
    await observer.end()
    await backend.close()
  }
}

describe('the fence row is read FOR SHARE: a put started while a takeover is in progress waits for it', () => {
  it('waits while the row is locked; after the takeover commits, LEASE_LOST with the new token, nothing stored', async () => {
    const run = await putWhileFenceRowLocked(DEFAULT_SCHEMA, 'takeover', false)
    expect(run).toEqual({
      put: { waited: 'fence-row holder', code: 'LEASE_LOST', currentToken: run.token + 1 },
      stored: 'before',
      owner: 'b',
      token: run.token,
    })
  }, 30_000)

  it('waits while the row is locked; a lock let go unchanged lets the put write', async () => {
    const run = await putWhileFenceRowLocked(DEFAULT_SCHEMA, 'rollback', false)
    expect(run).toEqual({
      put: { waited: 'fence-row holder', code: 'resolved' },
      stored: 'fenced',
      owner: 'a',
      token: run.token,
    })
  }, 30_000)

  it('mutant: a plain read of the fence row does not wait, and the put answers while the takeover is in progress', async () => {
    await mutants()
    const run = await putWhileFenceRowLocked(WITHOUT_FOR_SHARE, 'takeover', false)
    expect(run.put).toEqual({ waited: 'settled', code: 'resolved' })
  }, 30_000)

  it('with the written row locked by the same takeover: LEASE_LOST, nothing stored', async () => {
    const run = await putWhileFenceRowLocked(DEFAULT_SCHEMA, 'takeover', true)
    expect(run).toMatchObject({
      put: { waited: 'fence-row holder', code: 'LEASE_LOST', currentToken: run.token + 1 },
      stored: 'before',
      owner: 'b',
    })
  }, 30_000)

  it('mutant: without FOR SHARE the same put writes after the takeover committed (the fenced write lands after its lease was superseded)', async () => {
    await mutants()
    const run = await putWhileFenceRowLocked(WITHOUT_FOR_SHARE, 'takeover', true)
    // It waited too, but for the written row: its fence read had already passed.
    expect(run).toMatchObject({ put: { code: 'resolved' }, stored: 'fenced', owner: 'b' })
  }, 30_000)
})

/**
 * A fenced put holds the fence row FOR SHARE while it waits for the written
 * key's row (locked by a second session), and a lease step of the fence key
 * starts meanwhile: `release` by its holder, or `takeover`, an
 * `acquireLease` by another holder once the fence expired (TTL 3 s). Where
 * the lease step waits (`fenced put`: `pg_blocking_pids` names the put's
 * session; `settled`: it answered while the put was still waiting), then,
 * once the written row is let go, the outcomes and the stored value.
 */
async function leaseStepDuringFencedPut(schema: string, step: 'release' | 'takeover') {
  const { backend, namespace } = await open(schema)
  const locker = await connect()
  const observer = await connect()
  try {
    const lease = await backend.acquireLease('owner', {
      holder: 'a',
      ttlMs: step === 'release' ? 60_000 : 3000,
    })
    await backend.put('data', bytes('before'))
    const lockerPid = await pidOf(locker)
    await locker.query('BEGIN')
    await lockRow(locker, schema, namespace, 'data')
    const put = outcomeOf(backend.put('data', bytes('fenced'), { fence: lease }))
    const putPid = await waitingOn(observer, lockerPid, FENCED_CALL, put)
    expect(putPid).toBeDefined()
    if (step === 'takeover') {
      // getLease is a plain read: the share lock does not hold it up.
      while ((await backend.getLease('owner')) !== null) {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    const leaseStep = outcomeOf(
      step === 'release'
        ? backend.releaseLease(lease)
        : backend.acquireLease('owner', { holder: 'b', ttlMs: 60_000 }),
    )
    const waited = await waitingOn(observer, putPid ?? 0, LEASE_UPDATE, leaseStep)
    await locker.query('COMMIT')
    return {
      leaseStep: { waited: waited === undefined ? 'settled' : 'fenced put', ...(await leaseStep) },
      put: await put,
      stored: text(await backend.get('data')),
      owner: (await backend.getLease('owner'))?.token === lease.token + 1 ? 'b' : 'none or a',
    }
  } finally {
    await locker.end()
    await observer.end()
    await backend.close()
  }
}

describe('a lease step of the fence key waits for the fenced writes in flight', () => {
  it('releaseLease waits for the fenced put holding the row FOR SHARE, which writes first', async () => {
    expect(await leaseStepDuringFencedPut(DEFAULT_SCHEMA, 'release')).toEqual({
      leaseStep: { waited: 'fenced put', code: 'resolved' },
      put: { code: 'resolved' },
      stored: 'fenced',
      owner: 'none or a',
    })
  }, 30_000)

  it('mutant: without FOR SHARE the release answers first and the fenced put writes after it', async () => {
    await mutants()
    expect(await leaseStepDuringFencedPut(WITHOUT_FOR_SHARE, 'release')).toEqual({
      leaseStep: { waited: 'settled', code: 'resolved' },
      put: { code: 'resolved' },
      stored: 'fenced',
      owner: 'none or a',
    })
  }, 30_000)

  it('acquireLease by another holder after expiry waits for the fenced put, which then finds its fence expired: LEASE_LOST, nothing stored', async () => {
    expect(await leaseStepDuringFencedPut(DEFAULT_SCHEMA, 'takeover')).toEqual({
      leaseStep: { waited: 'fenced put', code: 'resolved' },
      put: { code: 'LEASE_LOST', currentToken: expect.any(Number) },
      stored: 'before',
      owner: 'b',
    })
  }, 30_000)

  it('mutant: without the expiry check in the write statement the put lands after its fence expired', async () => {
    await mutants()
    expect(await leaseStepDuringFencedPut(WITHOUT_WRITE_EXPIRY, 'takeover')).toMatchObject({
      leaseStep: { waited: 'fenced put', code: 'resolved' },
      put: { code: 'resolved' },
      stored: 'fenced',
    })
  }, 30_000)

  it('mutant: without FOR SHARE the takeover does not wait for the fenced put', async () => {
    await mutants()
    expect(await leaseStepDuringFencedPut(WITHOUT_FOR_SHARE, 'takeover')).toMatchObject({
      leaseStep: { waited: 'settled', code: 'resolved' },
    })
  }, 30_000)
})

describe('no lock outlives the statement timeouts', () => {
  it('a fenced put waiting on a fence row held past lock_timeout is UNAVAILABLE (55P03), nothing stored', async () => {
    const { backend, namespace } = await open(DEFAULT_SCHEMA, 300)
    const locker = await connect()
    try {
      const lease = await backend.acquireLease('owner', { holder: 'a', ttlMs: 60_000 })
      await backend.put('data', bytes('before'))
      await locker.query('BEGIN')
      await lockRow(locker, DEFAULT_SCHEMA, namespace, 'owner')
      await expect(backend.put('data', bytes('x'), { fence: lease })).rejects.toMatchObject({
        code: 'UNAVAILABLE',
        context: { sqlState: '55P03' },
      })
      await locker.query('ROLLBACK')
      expect(text(await backend.get('data'))).toBe('before')
      // The lock went with the statement: the fence key's holder renews at once.
      await backend.renewLease(lease)
    } finally {
      await locker.end()
      await backend.close()
    }
  }, 30_000)
})

/**
 * The crossing described in the README ("Fences crossing each other can
 * deadlock"): `a` and `b` leased, a second session holding both rows
 * `FOR SHARE`; a put of `a` fenced by `b`'s lease takes `b`'s row
 * `FOR SHARE` and waits on `a`'s, a put of `b` fenced by `a`'s lease takes
 * `a`'s row `FOR SHARE` (shared locks do not wait for each other) and waits
 * on `b`'s. The session lets go, and each put now waits for the other. The
 * outcomes of both puts (code, SQLSTATE, retryable), sorted by code, and
 * what `a` and `b` store after.
 */
async function crossingFences(schema: string) {
  const { backend, namespace } = await open(schema)
  const locker = await connect()
  const observer = await connect()
  const outcome = (call: Promise<unknown>) =>
    call.then(
      () => ({ code: 'resolved' }),
      (error: unknown) => {
        if (!isAgentStateError(error)) throw error
        return { code: error.code, sqlState: error.context.sqlState, retryable: error.retryable }
      },
    )
  try {
    const leaseA = await backend.acquireLease('a', { holder: 'x', ttlMs: 60_000 })
    const leaseB = await backend.acquireLease('b', { holder: 'y', ttlMs: 60_000 })
    const lockerPid = await pidOf(locker)
    await locker.query('BEGIN')
    await locker.query(
      `SELECT 1 FROM ${schema}.agent_state_entries WHERE namespace = $1 AND key IN ('a', 'b') FOR SHARE`,
      [namespace],
    )
    const puts = [
      outcome(backend.put('a', bytes('1'), { fence: leaseB })),
      outcome(backend.put('b', bytes('2'), { fence: leaseA })),
    ]
    const deadline = Date.now() + 15_000
    for (;;) {
      const { rows } = await observer.query<{ waiting: string }>(
        'SELECT count(*) AS waiting FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2',
        [lockerPid, FENCED_CALL],
      )
      if (Number(rows[0]?.waiting) === 2) break
      if (Date.now() > deadline) throw new Error('the two fenced puts never both waited')
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await locker.query('ROLLBACK')
    const outcomes = (await Promise.all(puts)).sort((x, y) => x.code.localeCompare(y.code))
    return { outcomes, a: text(await backend.get('a')), b: text(await backend.get('b')) }
  } finally {
    await locker.end()
    await observer.end()
    await backend.close()
  }
}

describe('fences crossing each other', () => {
  it('deadlock: PostgreSQL cancels one put (UNAVAILABLE, 40P01, retryable), the other answers LEASE_HELD; nothing stored', async () => {
    expect(await crossingFences(DEFAULT_SCHEMA)).toEqual({
      outcomes: [
        { code: 'LEASE_HELD', sqlState: undefined, retryable: false },
        { code: 'UNAVAILABLE', sqlState: '40P01', retryable: true },
      ],
      a: null,
      b: null,
    })
  }, 30_000)

  it('mutant: without FOR SHARE the puts never hold each other up, and both answer LEASE_HELD', async () => {
    await mutants()
    expect(await crossingFences(WITHOUT_FOR_SHARE)).toEqual({
      outcomes: [
        { code: 'LEASE_HELD', sqlState: undefined, retryable: false },
        { code: 'LEASE_HELD', sqlState: undefined, retryable: false },
      ],
      a: null,
      b: null,
    })
  }, 30_000)
})
