import type { Backend } from '@agent-state/core'
import { type RedisServer, redisCli } from '@agent-state/test-services'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRedisBackend, type RedisBackendOptions, redisKeyLayout } from '../src/index.js'
import { ACQUIRE, RENEW } from '../src/lua-scripts.js'
import { failureOf, startReplicaPair, until } from './replica-pair.js'
import { type ScriptMutant, withScriptMutant } from './script-mutant.js'

/**
 * The hand-written mutants that commits c1f06d4 and ab30438 (the promotion
 * hold) said their tests fail, committed so anyone can rerun the claim: each
 * mutant is applied to the Lua script's source (`script-mutant.ts`), the
 * assertions of the `promotion-hold.test.ts` test that was to catch it run on
 * real servers (a primary, then its replica promoted with `REPLICAOF NO ONE`),
 * and they must pass on the real script and fail on the mutant. Each case
 * runs in two namespaces of its own (real, mutant); shorter holds than the
 * original file's, so the whole file waits seconds.
 */

/** Backends a phase opened; closed when it ends. */
type Open = (server: RedisServer, options?: Partial<RedisBackendOptions>) => Backend

interface Scenario {
  /** The `promotion-hold.test.ts` test whose assertions this repeats. */
  readonly test: string
  /** On the primary, before the promotion (the grants the hold is measured from). */
  readonly before: (namespace: string, open: Open) => Promise<void>
  /** On the promoted replica. */
  readonly after?: (namespace: string, open: Open) => Promise<void>
}

interface MutantCase {
  readonly commit: string
  readonly name: string
  readonly mutant: ScriptMutant
  readonly scenario: Scenario
  /** The assertion failure the mutant must cause. */
  readonly failure: RegExp
}

let primary: RedisServer
let replica: RedisServer

async function serverNow(server: RedisServer): Promise<number> {
  const [seconds, micros] = (await redisCli(server.port, ['TIME'])).trim().split('\n')
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)
}

/** The hold's end the promoted node reports for a grant it refuses, checked to be `holdMs` from now. */
async function refusedHoldEnd(backend: Backend, holdMs: number, key = 'free'): Promise<number> {
  const before = await serverNow(replica)
  const refused = await failureOf(backend.acquireLease(key, { holder: 'new', ttlMs: 100 }))
  const after = await serverNow(replica)
  expect(refused).toMatchObject({ code: 'LEASE_HELD', context: { promotionHold: true } })
  const end = (refused.context as { expiresAt: number }).expiresAt
  expect(end).toBeGreaterThanOrEqual(before + holdMs)
  expect(end).toBeLessThanOrEqual(after + holdMs)
  return end
}

/** c1f06d4 "no recording" and the default-options hold test. */
const recordedHold: Scenario = {
  test: 'with every option at its default, the hold lasts the longest TTL the namespace granted',
  async before(namespace, open) {
    const b = open(primary)
    await b.acquireLease('long', { holder: 'h', ttlMs: 2000 })
    await b.acquireLease('short', { holder: 'h', ttlMs: 500 })
    // (the never-promoted test) the grant records the namespace's longest TTL
    const meta = redisKeyLayout('as', namespace).meta
    expect((await redisCli(primary.port, ['HGET', meta, 'mt'])).trim()).toBe('2000')
  },
  async after(_namespace, open) {
    await refusedHoldEnd(open(replica), 2000)
  },
}

/** c1f06d4 "bound ignored": the explicit maxLeaseTtlMs test. */
const boundedHold: Scenario = {
  test: 'an explicit maxLeaseTtlMs is the hold when the recorded TTL is shorter',
  async before(_namespace, open) {
    await open(primary).acquireLease('k', { holder: 'h', ttlMs: 500 })
  },
  async after(_namespace, open) {
    await refusedHoldEnd(open(replica, { maxLeaseTtlMs: 2500 }), 2500)
  },
}

/** c1f06d4 "settled hold re-extended": no new hold once the hold is over. */
const settledHold: Scenario = {
  test: 'with every option at its default, the hold lasts the longest TTL the namespace granted (no new hold after it)',
  async before(_namespace, open) {
    await open(primary).acquireLease('k', { holder: 'h', ttlMs: 800 })
  },
  async after(_namespace, open) {
    const b = open(replica)
    const end = await refusedHoldEnd(b, 800)
    await until('the hold to end', async () => (await serverNow(replica)) > end, 30_000)
    expect((await b.acquireLease('free', { holder: 'new', ttlMs: 100 })).holder).toBe('new')
    // A longer grant after the hold is not one the old primary acknowledged: no new hold.
    expect((await b.acquireLease('longer', { holder: 'new', ttlMs: 20_000 })).holder).toBe('new')
    expect(await failureOf(b.acquireLease('next', { holder: 'new', ttlMs: 100 }))).toEqual({
      code: 'resolved',
      context: null,
    })
  },
}

/** c1f06d4 "renew not recording": a renewal records its TTL (a lease from before grants recorded it). */
const renewRecords: Scenario = {
  test: 'a renewal records its TTL too (a lease granted before grants recorded it)',
  async before(namespace, open) {
    const layout = redisKeyLayout('as', namespace)
    const expiresAt = (await serverNow(primary)) + 60_000
    await redisCli(primary.port, [
      'HSET',
      layout.record('k'),
      ...['lh', 'old', 'lt', '7', 'lttl', '7000', 'le', String(expiresAt), 'n', '7'],
    ])
    const renewed = await open(primary).renewLease({
      key: 'k',
      holder: 'old',
      token: 7,
      ttlMs: 7000,
      expiresAt,
    })
    expect(renewed.ttlMs).toBe(7000)
    expect((await redisCli(primary.port, ['HGET', layout.meta, 'mt'])).trim()).toBe('7000')
  },
}

/** ab30438 "no extension once recorded": a longer promotionHoldMs extends the running hold. */
const extendedHold: Scenario = {
  test: 'an instance configured with a longer hold extends it, from the same start',
  async before(_namespace, open) {
    await open(primary).acquireLease('k', { holder: 'h', ttlMs: 1500 })
  },
  async after(_namespace, open) {
    const end = await refusedHoldEnd(open(replica), 1500)
    const longer = await failureOf(
      open(replica, { promotionHoldMs: 4500 }).acquireLease('other', { holder: 'l', ttlMs: 100 }),
    )
    expect(longer).toMatchObject({
      code: 'LEASE_HELD',
      context: { promotionHold: true, expiresAt: end + 3000 },
    })
    // Every instance now honours the longer end.
    expect(
      await failureOf(open(replica).acquireLease('third', { holder: 'x', ttlMs: 100 })),
    ).toMatchObject({ context: { promotionHold: true, expiresAt: end + 3000 } })
  },
}

const CASES: readonly MutantCase[] = [
  {
    commit: 'c1f06d4',
    name: 'no recording (a grant does not record its TTL)',
    mutant: {
      script: ACQUIRE,
      from: "record_ttl(KEYS[3], known, tonumber(ARGV[3]))\nreturn {'OK'",
      to: "return {'OK'",
    },
    scenario: recordedHold,
    failure: /expected '' to be '2000'/,
  },
  {
    commit: 'c1f06d4',
    name: 'bound ignored (the configured hold does not count)',
    mutant: {
      script: ACQUIRE,
      from: 'local hold = math.max(tonumber(ARGV[6]), known)',
      to: 'local hold = known',
    },
    scenario: boundedHold,
    failure: /to be greater than or equal to/,
  },
  {
    commit: 'c1f06d4',
    name: 'settled hold re-extended (a hold once over grows again with a longer grant)',
    mutant: { script: ACQUIRE, from: '      if till <= now then hold = 0 end\n', to: '' },
    scenario: settledHold,
    failure: /expected \{ code: 'LEASE_HELD', …\(1\) \} to deeply equal \{ code: 'resolved'/,
  },
  {
    commit: 'c1f06d4',
    name: 'renew not recording',
    mutant: { script: RENEW, from: 'record_ttl(KEYS[2], known, tonumber(f[3]))\n', to: '' },
    scenario: renewRecords,
    failure: /expected '' to be '7000'/,
  },
  {
    commit: 'ab30438',
    name: 'no extension once recorded',
    mutant: {
      script: ACQUIRE,
      from: 'if m[1] ~= id or from + hold > till then',
      to: 'if m[1] ~= id then',
    },
    scenario: extendedHold,
    failure: /expected \{ code: 'LEASE_HELD', …\(1\) \} to match object/,
  },
]

/** How each case ended, real script and mutant: `passed` or what it threw. */
const outcomes = new Map<string, { real: unknown; mutant: unknown }>()

/** Runs one phase with (or without) the mutant, closing the backends it opened; records a failure. */
async function phase(
  mutant: ScriptMutant | null,
  namespace: string,
  step: (namespace: string, open: Open) => Promise<void>,
): Promise<unknown> {
  const mine: Backend[] = []
  const open: Open = (server, options = {}) => {
    const b = createRedisBackend({ port: server.port, namespace, ...options })
    mine.push(b)
    return b
  }
  try {
    await withScriptMutant(mutant, () => step(namespace, open))
    return 'passed'
  } catch (error) {
    return error
  } finally {
    await Promise.all(mine.map((b) => b.close()))
  }
}

beforeAll(async () => {
  ;({ primary, replica } = await startReplicaPair())
  const runs = CASES.flatMap((c, index) =>
    (['real', 'mutant'] as const).map((kind) => ({
      c,
      kind,
      namespace: `m${index}-${kind}`,
      mutant: kind === 'mutant' ? c.mutant : null,
    })),
  )
  const results = new Map<string, unknown>()
  for (const run of runs) {
    results.set(run.namespace, await phase(run.mutant, run.namespace, run.c.scenario.before))
  }
  // Everything written so far is on the replica once a later write is (a replica applies in order).
  await redisCli(primary.port, ['SET', 'mutants-sentinel', 'x'])
  await until(
    'the grants to replicate',
    async () => (await redisCli(replica.port, ['GET', 'mutants-sentinel'])).trim() === 'x',
  )
  await redisCli(replica.port, ['REPLICAOF', 'NO', 'ONE'])
  for (const run of runs) {
    const after = run.c.scenario.after
    if (results.get(run.namespace) === 'passed' && after !== undefined) {
      results.set(run.namespace, await phase(run.mutant, run.namespace, after))
    }
  }
  CASES.forEach((c, index) => {
    outcomes.set(c.name, {
      real: results.get(`m${index}-real`),
      mutant: results.get(`m${index}-mutant`),
    })
  })
}, 120_000)

afterAll(async () => {
  for (const server of [primary, replica]) {
    if (server?.pid !== undefined) process.kill(server.pid, 'SIGKILL')
  }
  await Promise.all([primary?.stop(), replica?.stop()])
}, 60_000)

describe('the promotion hold tests catch the mutants their commits named', () => {
  for (const c of CASES) {
    it(`${c.commit}: "${c.name}" fails "${c.scenario.test}"; the real script passes it`, () => {
      const outcome = outcomes.get(c.name)
      expect(outcome?.real).toBe('passed')
      const failure = outcome?.mutant
      expect(failure).toBeInstanceOf(Error)
      expect((failure as Error).name).toBe('AssertionError')
      expect((failure as Error).message).toMatch(c.failure)
    })
  }
})
