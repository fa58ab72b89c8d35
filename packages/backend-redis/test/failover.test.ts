import type { Backend, Lease } from '@agent-state/core'
import { type RedisServer, redisCli, startRedisServer } from '@agent-state/test-services'
import { afterAll, describe, expect, it } from 'vitest'
import { createRedisBackend, redisKeyLayout } from '../src/index.js'
import {
  acquireLogged,
  acquirePolling,
  casWorker,
  firstGrant,
  leaseWorker,
  lostValues,
  newLog,
  overlaps,
  readCounter,
  staleAttempts,
  type TrialFindings,
} from './failover-load.js'

/**
 * Failover tier on real servers: a primary and a replica, CAS increments and
 * lease cycles on the primary, then a fault, the replica promoted with
 * `REPLICAOF NO ONE`, and the load continued on it. Two faults alternate:
 * - `sigstop`: the primary is frozen (SIGSTOP), then the replica promoted;
 * - `partition`: the replica is cut off (promoted) first while the primary
 *   keeps serving for 800 ms (WAIT's timeout is 200 ms), then the primary is frozen.
 * `REDIS_FAILOVER_TRIALS` (default 10) sets the trials per mode.
 *
 * Right before the primary freezes it grants one more lease (`cut-key`; in
 * the partition trials the promoted node never hears of it), and the
 * promoted node's first grant attempt is that key, at once: without the
 * promotion hold it is granted again while the old holder still holds it.
 * Every backend sets `maxLeaseTtlMs` = the trials' TTL, the strict
 * guarantee of the README: the hold then lasts TTL_MS from that first attempt
 * whatever the promoted node recorded. That is the configuration this tier
 * must use, because `cut-key` is granted after the cut in the partition
 * trials, so the promoted node may never receive it (nor anything it
 * recorded); by default the hold would rest on the longest TTL the node did
 * receive, which here happens to be the same TTL_MS from earlier grants, so
 * the default is not what this tier proves (`promotion-hold.test.ts` pins it).
 */

const TRIALS = Number(process.env.REDIS_FAILOVER_TRIALS ?? '10')
if (!Number.isSafeInteger(TRIALS) || TRIALS < 1) {
  throw new Error('REDIS_FAILOVER_TRIALS must be a positive integer')
}
// The tier's promise is at least 10 trials per mode in CI: a knob may add trials, never remove them there.
if (process.env.CI !== undefined && process.env.CI !== '' && TRIALS < 10) {
  throw new Error(`CI runs at least 10 failover trials per mode (REDIS_FAILOVER_TRIALS=${TRIALS})`)
}
const TTL_MS = 1500
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const encoder = new TextEncoder()
const servers: RedisServer[] = []
const backends: Backend[] = []

afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()))
  await Promise.all(servers.map((s) => s.stop()))
}, 120_000)

async function waitForLink(replica: RedisServer): Promise<void> {
  const deadline = Date.now() + 15_000
  while (
    !(await redisCli(replica.port, ['INFO', 'replication'])).includes('master_link_status:up')
  ) {
    if (Date.now() > deadline) throw new Error('the replica never linked to the primary')
    await sleep(50)
  }
}

function open(server: RedisServer, durable: boolean): Backend {
  const b = createRedisBackend({
    port: server.port,
    commandTimeoutMs: 1000,
    connectTimeoutMs: 1000,
    maxLeaseTtlMs: TTL_MS,
    ...(durable ? { replication: { replicas: 1, timeoutMs: 200 } } : {}),
  })
  backends.push(b)
  return b
}

async function trial(durable: boolean, fault: 'sigstop' | 'partition'): Promise<TrialFindings> {
  const primary = await startRedisServer()
  const replica = await startRedisServer({
    extraArgs: ['--replicaof', '127.0.0.1', String(primary.port)],
  })
  servers.push(primary, replica)
  await waitForLink(replica)
  const pid = primary.pid
  if (pid === undefined) throw new Error('primary not running')
  try {
    return await loadAndFail(primary, replica, pid, durable, fault)
  } finally {
    // SIGTERM would stay pending on a stopped process: kill it outright.
    process.kill(pid, 'SIGKILL')
  }
}

/** Seeds the counter and waits until the replica has it, so every trial starts from a replicated state. */
async function seed(a: Backend, replica: RedisServer): Promise<void> {
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      await a.put('counter', encoder.encode('0'))
    } catch (error) {
      // Under load the first WAIT may time out; the put is idempotent.
      if (Date.now() > deadline) throw error
      continue
    }
    if (
      (
        await redisCli(replica.port, ['EXISTS', redisKeyLayout('as', 'default').record('counter')])
      ).trim() === '1'
    )
      return
    if (Date.now() > deadline) throw new Error('the seed never reached the replica')
    await sleep(20)
  }
}

async function loadAndFail(
  primary: RedisServer,
  replica: RedisServer,
  pid: number,
  durable: boolean,
  fault: 'sigstop' | 'partition',
): Promise<TrialFindings> {
  const a = open(primary, durable)
  await seed(a, replica)
  const log = newLog()
  // Awaited as one promise at once, so an unexpected failure is never an unhandled rejection.
  const workers = Promise.all([
    casWorker(a, 'counter', log),
    casWorker(a, 'counter', log),
    casWorker(a, 'counter', log),
    leaseWorker(a, 'lock', 'old-1', TTL_MS, log),
    leaseWorker(a, 'lock', 'old-2', TTL_MS, log),
  ])
  await sleep(600)
  // A holder that is in the middle of its tenure when the fault strikes.
  const stale: Lease = await a.acquireLease('stale-key', { holder: 'stale', ttlMs: TTL_MS })
  log.tokens.push(stale.token)
  log.held.push({
    key: 'stale-key',
    token: stale.token,
    grantedAt: stale.expiresAt - TTL_MS,
    end: stale.expiresAt,
  })
  if (fault === 'partition') {
    await redisCli(replica.port, ['REPLICAOF', 'NO', 'ONE'])
    // Longer than WAIT's timeout, so unconfirmed writes do come back to the clients.
    await sleep(800)
    await acquireLogged(a, 'cut-key', 'cut', TTL_MS, log)
    process.kill(pid, 'SIGSTOP')
  } else {
    await acquireLogged(a, 'cut-key', 'cut', TTL_MS, log)
    process.kill(pid, 'SIGSTOP')
    await redisCli(replica.port, ['REPLICAOF', 'NO', 'ONE'])
  }
  log.stopped = true

  // The new primary has no replica of its own: the load continues without WAIT (and with the hold).
  const b = open(replica, false)
  // Its first grant attempt, while the old primary's last lease may still run.
  const first = await firstGrant(b, 'cut-key', TTL_MS, TTL_MS * 6)
  await workers
  const found = (await readCounter(b, 'counter')) ?? 0
  const stopLoad = newLog()
  const continued = Promise.all([
    casWorker(b, 'counter', stopLoad),
    casWorker(b, 'counter', stopLoad),
  ])
  await sleep(200)
  stopLoad.stopped = true
  await continued
  expect(await readCounter(b, 'counter')).toBe(found + stopLoad.ackedValues.length)

  const maxOldToken = Math.max(0, ...log.tokens)
  let reissuedTokens = first.lease.token <= maxOldToken ? 1 : 0
  let doubleHolders = overlaps(log, 'cut-key', first.lease.expiresAt - TTL_MS)
  const newLeases: Lease[] = []
  for (const key of ['lock', 'stale-key']) {
    const lease = await acquirePolling(b, key, 'new', TTL_MS, TTL_MS * 6)
    newLeases.push(lease)
    if (lease.token <= maxOldToken) reissuedTokens++
    doubleHolders += overlaps(log, key, lease.expiresAt - TTL_MS)
  }
  const staleAccepted = await staleAttempts(b, stale)
  // The new lease's id is still the stored one (read raw: it may have expired meanwhile, which is no disturbance).
  const storedId = (
    await redisCli(replica.port, [
      'HGET',
      redisKeyLayout('as', 'default').record('stale-key'),
      'li',
    ])
  ).trim()
  if (storedId !== newLeases[1]?.leaseId) staleAccepted.push('the new lease was disturbed')
  // The hold the promoted node recorded for itself (its own replication id).
  const replid = /master_replid:([0-9a-f]+)/.exec(
    await redisCli(replica.port, ['INFO', 'replication']),
  )?.[1]
  const recorded = (
    await redisCli(replica.port, ['HGET', redisKeyLayout('as', 'default').meta, 'hr'])
  ).trim()
  return {
    acked: log.ackedValues.length,
    lostAcked: lostValues(log, found),
    grants: log.tokens.length,
    reissuedTokens,
    doubleHolders,
    staleAccepted,
    indeterminate: log.indeterminate,
    holdRecorded: replid !== undefined && recorded === replid,
    holdRefusals: first.holdRefusals,
    firstGrantWaitMs: first.waitedMs,
  }
}

async function runTrials(durable: boolean): Promise<TrialFindings[]> {
  const findings: TrialFindings[] = []
  for (let i = 0; i < TRIALS; i++) {
    findings.push(await trial(durable, i % 2 === 0 ? 'sigstop' : 'partition'))
  }
  return findings
}

const sum = (
  list: TrialFindings[],
  field:
    | 'acked'
    | 'lostAcked'
    | 'grants'
    | 'doubleHolders'
    | 'reissuedTokens'
    | 'indeterminate'
    | 'holdRefusals',
) => list.reduce((total, f) => total + f[field], 0)

// The two modes use their own servers, so they run at the same time (each waits on
// SIGSTOP windows and lease TTLs far more than it computes).
describe.concurrent('failover: primary frozen or partitioned, replica promoted', () => {
  it(`with durable acknowledgement: nothing acknowledged is lost (${TRIALS} trials)`, async () => {
    const findings = await runTrials(true)
    console.info('failover with replication {replicas: 1}:', JSON.stringify(findings))
    // The load did run, and the partition did leave writes unconfirmed.
    expect(sum(findings, 'acked')).toBeGreaterThan(0)
    expect(sum(findings, 'grants')).toBeGreaterThan(TRIALS)
    expect(
      sum(
        findings.filter((_, i) => i % 2 === 1),
        'indeterminate',
      ),
    ).toBeGreaterThan(0)
    expect(sum(findings, 'lostAcked')).toBe(0)
    expect(sum(findings, 'reissuedTokens')).toBe(0)
    expect(sum(findings, 'doubleHolders')).toBe(0)
    expect(findings.flatMap((f) => f.staleAccepted)).toEqual([])
  }, 600_000)

  it(`without it: writes acknowledged after the replica was cut off are lost, leases are waited out (${TRIALS} trials)`, async () => {
    const findings = await runTrials(false)
    console.info('failover without replication:', JSON.stringify(findings))
    expect(sum(findings, 'acked')).toBeGreaterThan(0)
    // The promotion hold: no lease the old primary acknowledged was granted again while it ran...
    expect(sum(findings, 'doubleHolders')).toBe(0)
    // ...because every promoted node recorded its hold (and the first grant waited for it).
    expect(findings.filter((f) => f.holdRecorded)).toHaveLength(TRIALS)
    expect(sum(findings, 'holdRefusals')).toBeGreaterThan(0)
    // What the README documents: acknowledged writes (and leases) after the cut are gone...
    expect(
      sum(
        findings.filter((_, i) => i % 2 === 1),
        'lostAcked',
      ),
    ).toBeGreaterThan(0)
    // ...but the time floor and the lease id still hold: no token repeats, no stale holder wins.
    expect(sum(findings, 'reissuedTokens')).toBe(0)
    expect(findings.flatMap((f) => f.staleAccepted)).toEqual([])
  }, 600_000)
})
