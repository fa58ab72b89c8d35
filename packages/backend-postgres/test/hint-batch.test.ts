import { startPostgresServer } from '@agent-state/test-services'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { DEFAULT_SCHEMA } from '../src/options.js'
import { openWithHooks, type PostgresBackendHooks } from '../src/postgres-backend.js'
import { ENTRIES_TABLE } from '../src/schema.js'
import { countQueries } from './query-count.js'

const server = await startPostgresServer()
afterAll(() => server.stop())

const { counts } = countQueries()

const bytes = (text: string) => new TextEncoder().encode(text)

/** Resolves once `sql` (on `admin`) answers a count of at least `count`. */
async function until(admin: pg.Client, sql: string, count: number): Promise<void> {
  const deadline = Date.now() + 10_000
  while (Number((await admin.query(sql)).rows[0].count) < count) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${sql}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Whether `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms)
  })
  const settled = promise.then(
    () => true as const,
    () => true as const,
  )
  try {
    return await Promise.race([settled, late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * A writer with 2 pooled connections (its timeouts past the test's waits), whose single-key
 * hint waits for an advisory lock this test holds:
 * 1. `a` is written; its pipelined hint is held (a hint in flight, `a`'s connection kept);
 * 2. `b` is written meanwhile: it commits and joins the waiting batch;
 * 3. a lease step on `locked` takes the other connection and waits on a row lock the test holds;
 * 4. with `blockedAhead`, a second lease step on `locked` queues for a connection first;
 * 5. `c` is written: pending, queued for a connection;
 * 6. the hint of `a` is let go: the batch of `b` waits for a write to carry it. `a`'s
 *    connection goes to the first in the queue: `c` (which carries the batch), or, with
 *    `blockedAhead`, the second lease step (which blocks too, so `c` stays pending).
 * Returns whether `b` was acknowledged within 3 s of step 6 and whether `c` was, then (the
 * row lock released) the keys each hint statement of the namespace named from step 1 on
 * (counted by `query-count.ts`).
 */
async function carrierScenario(hooks: PostgresBackendHooks, blockedAhead: boolean) {
  const namespace = `carry-${Math.random().toString(36).slice(2)}`
  const lock = 5_000_000 + Math.floor(Math.random() * 1_000_000)
  const admin = new pg.Client({ connectionString: server.url })
  await admin.connect()
  const writer = await openWithHooks(
    {
      connectionString: server.url,
      namespace,
      poolSize: 2,
      lockTimeoutMs: 30_000,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 30_000,
    },
    {
      ...hooks,
      statements: (own) => ({
        ...own,
        announce: own.announce.replace('SELECT ', `SELECT pg_advisory_xact_lock(${lock}), `),
      }),
    },
  )
  const waitingOnLocks = (count: number) =>
    until(
      admin,
      `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND application_name = 'agent-state'`,
      count,
    )
  const leaseSteps: Promise<unknown>[] = []
  try {
    await writer.put('locked', bytes('x'))
    await admin.query('SELECT pg_advisory_lock($1)', [lock])
    const hintsBefore = counts.hinted.length
    const a = writer.put('a', bytes('a'))
    await waitingOnLocks(1)
    const b = writer.put('b', bytes('b'))
    await until(
      admin,
      `SELECT count(*) FROM ${DEFAULT_SCHEMA}.${ENTRIES_TABLE} WHERE namespace = '${namespace}' AND key = 'b'`,
      1,
    )
    await admin.query('BEGIN')
    await admin.query(
      `SELECT 1 FROM ${DEFAULT_SCHEMA}.${ENTRIES_TABLE} WHERE namespace = $1 AND key = 'locked' FOR UPDATE`,
      [namespace],
    )
    leaseSteps.push(writer.acquireLease('locked', { holder: 'first', ttlMs: 60_000 }))
    await waitingOnLocks(2)
    if (blockedAhead) {
      leaseSteps.push(writer.acquireLease('locked', { holder: 'second', ttlMs: 60_000 }))
      await new Promise((resolve) => setImmediate(resolve))
    }
    const c = writer.put('c', bytes('c'))
    await new Promise((resolve) => setImmediate(resolve))
    await admin.query('SELECT pg_advisory_unlock($1)', [lock])
    await a
    const bAcknowledged = await settlesWithin(b, 3_000)
    const cAcknowledged = await settlesWithin(c, 0)
    await admin.query('COMMIT')
    await Promise.all([b, c, ...leaseSteps.map((step) => step.catch(() => undefined))])
    const hints = counts.hinted
      .slice(hintsBefore)
      .filter((hint) => hint.namespace === namespace)
      .map((hint) => hint.keys)
    return { bAcknowledged, cAcknowledged, hints }
  } finally {
    await admin.query('ROLLBACK').catch(() => undefined)
    await Promise.all(leaseSteps.map((step) => step.catch(() => undefined)))
    await Promise.all([writer.close(), admin.end()])
  }
}

describe('a batch of change hints is carried by the next write', () => {
  // A long wait for the carrier: only a carried batch acknowledges `b` here.
  it('the write sent next names the waiting keys in its own hint: no statement of their own', async () => {
    expect(await carrierScenario({ carrierWaitMs: 60_000 }, false)).toEqual({
      bAcknowledged: true,
      cAcknowledged: true,
      hints: [['a'], ['c', 'b']],
    })
  }, 60_000)

  it('mutant: a batch that never waits for a carrier takes a statement of its own', async () => {
    const { hints } = await carrierScenario({ carrierWaitMs: 60_000, carryHints: false }, false)
    expect(hints?.[1]).toEqual(['b'])
    expect(hints).toHaveLength(3)
  }, 60_000)

  it('a carrier stuck behind slow statements: the batch takes the lane after CARRIER_WAIT_MS', async () => {
    expect(await carrierScenario({}, true)).toEqual({
      bAcknowledged: true,
      cAcknowledged: false,
      hints: [['a'], ['b'], ['c']],
    })
  }, 60_000)

  it('mutant: a batch that waits for its carrier however long leaves the write unacknowledged', async () => {
    expect(await carrierScenario({ carrierWaitMs: 60_000 }, true)).toEqual({
      bAcknowledged: false,
      cAcknowledged: false,
      hints: [['a'], ['c', 'b']],
    })
  }, 60_000)
})
